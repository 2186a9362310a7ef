// A deterministic summarizer with no network: the embedded default when no provider is configured.
#pragma once

#include <agentctx/providers/summarizer.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>

namespace agentctx::providers {

/// Builds the checkpoint from the prompt's serialized transcript with fixed rules:
/// - Goal: the previous summary's goal, else the first user request;
/// - Constraints & Preferences: user sentences with must / never / always / don't / prefer;
/// - Progress / Done: completed tool rounds (a call followed by its result), In Progress: an
///   unanswered call;
/// - Key Decisions: assistant statements of intent or reason;
/// - Next Steps: the last user request;
/// - Critical Context: exact file paths, commands and error lines.
/// A turn-prefix prompt gets Original Request / Progress So Far / Context Needed to Continue. The text is
/// trimmed to the request's output cap (chars/4). Same prompt in, same summary out.
compaction::summary_output offline_summary(const compaction::summary_prompt& prompt);

/// The summarizer form of offline_summary; completes through the given executor. Its name() is
/// "offline", which the runtime records in the compaction's details.
class offline_summarizer final : public summarizer
{
public:
    /// `delay` simulates a slow model (demos, tests): the result arrives after it, and the request
    /// can be cancelled while it waits (completes with `operation_aborted`).
    explicit offline_summarizer(boost::asio::any_io_executor ex, std::chrono::milliseconds delay = {})
        : ex_(std::move(ex)), delay_(delay)
    {
    }
    std::string name() const override { return "offline"; }

protected:
    void summarize_impl(compaction::summary_prompt prompt, boost::asio::any_completion_handler<summarize_signature> handler) override;

private:
    boost::asio::any_io_executor ex_;
    std::chrono::milliseconds delay_;
};

}  // namespace agentctx::providers
