// The summarizer interface: one asynchronous model call that turns a prompt into summary text.
#pragma once

#include <agentctx/compaction/summary.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/async_call.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <string>

namespace agentctx::providers {

using summarize_signature = void(boost::system::error_code, compaction::summary_output);

/// A model (or an offline stand-in) that writes summaries.
///
/// `ec` reports transport-level failures (`boost::asio::error::operation_aborted` when cancelled);
/// a model-level outcome (stop reasons `length`, `error`, `aborted`) arrives as a summary_output
/// with ec clear, and the caller validates it.
/// With `ec` set, the summary_output carries only `failure_detail`: the provider's safe account
/// of the failure (its cause and the attempts made), which hosts show after the code.
class summarizer
{
public:
    virtual ~summarizer() = default;

    /**
     * @brief Requests one summary.
     * @par Per-operation cancellation
     * `terminal` (and stronger): the request stops at once and completes with
     * `operation_aborted`. Implementations may support `partial` too.
     * @par Completion
     * Never inline: the handler runs through its associated executor.
     */
    template <boost::asio::completion_token_for<summarize_signature> CompletionToken>
    auto async_summarize(compaction::summary_prompt prompt, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<summarize_signature>(token, this, &summarizer::summarize_impl, std::move(prompt));
    }

    /// A short identity for logs and compaction details (`offline`, `openai:gpt-4.1`).
    virtual std::string name() const = 0;

protected:
    virtual void summarize_impl(
        compaction::summary_prompt prompt,
        boost::asio::any_completion_handler<summarize_signature> handler
    ) = 0;
};

}  // namespace agentctx::providers
