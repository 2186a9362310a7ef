// The summarizer interface: one asynchronous model call that turns a prompt into summary text.
#pragma once

#include <agentctx/compaction/summary.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/providers/async_call.hpp>
#include <agentctx/providers/provider_types.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace agentctx::providers {

using summarize_signature = void(boost::system::error_code, compaction::summary_output);
/// An exact input count, in tokens, of what a summary request would send.
using count_signature = void(boost::system::error_code, std::int64_t);
using native_signature = void(boost::system::error_code, native_reply);

/// What a summarizer offers besides summaries. Both are optional: the runtime uses
/// the conservative estimate and portable summaries without them.
struct summarizer_capabilities
{
    bool exact_counting = false;     ///< async_count_tokens answers
    bool native_compaction = false;  ///< async_compact_native may answer (it may still say not_supported)
    /// The smallest window the provider compacts natively (Anthropic's minimum trigger); smaller
    /// windows use portable summaries without asking.
    std::int64_t native_min_tokens = 0;
    /// Cache-friendly summary requests (summary_prompt::head) are sent, rendered in this wire
    /// format; nullopt = standalone requests only (a head is ignored).
    std::optional<wire_format> head_format;
    /// Where the requests go (`anthropic`, `openai`, `vllm`, ...) and the model: a conversation's
    /// prompt cache is the provider's, per model.
    std::string provider, model;
    /// A deterministic extractor (the offline summarizer): asked again it answers the same, so the
    /// recall gate sends it no follow-up and carries what it left out verbatim.
    bool extractive = false;
    /// OpenAI inline compaction (`native.openai: "inline"`): the loop's own Responses request
    /// carries `context_management` with the session's threshold, and native compaction asks with
    /// a `compaction_trigger` item in an ordinary `/responses` request.
    bool inline_compaction = false;
};

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
        return ::agentctx::detail::async_call<summarize_signature>(
            token, this, &summarizer::summarize_impl, std::move(prompt)
        );
    }

    /**
     * @brief Counts the input tokens `prompt` would take, exactly, with the provider's own
     * counting endpoint.
     * @par Per-operation cancellation
     * `terminal`: completes with `operation_aborted`.
     * Without the capability: completes with providers `not_supported` (never inline).
     */
    template <boost::asio::completion_token_for<count_signature> CompletionToken>
    auto async_count_tokens(compaction::summary_prompt prompt, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<count_signature>(
            token, this, &summarizer::count_impl, std::move(prompt)
        );
    }

    /**
     * @brief One provider-native compaction of the complete window (never split).
     *
     * A valid reply holds exactly one compaction item (checked); `native_invalid` names what was
     * wrong, `not_supported` says the provider or model does not offer it; other providers errc
     * codes as for summaries. With an error, the reply carries only `failure_detail`.
     * @par Per-operation cancellation
     * `terminal`: completes with `operation_aborted`.
     */
    template <boost::asio::completion_token_for<native_signature> CompletionToken>
    auto async_compact_native(native_request request, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<native_signature>(
            token, this, &summarizer::native_impl, std::move(request)
        );
    }

    /**
     * @brief Counts the input tokens a native compaction request for `request` would take,
     * exactly (Anthropic `count_tokens` with the request's system, tools and messages; OpenAI
     * `responses/input_tokens` with its input and instructions).
     * @par Per-operation cancellation
     * `terminal`: completes with `operation_aborted`.
     * Without exact counting: completes with providers `not_supported` (never inline).
     */
    template <boost::asio::completion_token_for<count_signature> CompletionToken>
    auto async_count_native(native_request request, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<count_signature>(
            token, this, &summarizer::count_native_impl, std::move(request)
        );
    }

    /// A short identity for logs and compaction details (`offline`, `openai:gpt-4.1`).
    virtual std::string name() const = 0;

    virtual summarizer_capabilities capabilities() const { return {}; }

protected:
    virtual void summarize_impl(
        compaction::summary_prompt prompt, boost::asio::any_completion_handler<summarize_signature> handler
    ) = 0;
    /// Default: `not_supported`, posted to the handler's executor.
    virtual void count_impl(
        compaction::summary_prompt prompt, boost::asio::any_completion_handler<count_signature> handler
    );
    /// Default: `not_supported`, posted to the handler's executor.
    virtual void native_impl(
        native_request request, boost::asio::any_completion_handler<native_signature> handler
    );
    /// Default: `not_supported`, posted to the handler's executor.
    virtual void count_native_impl(
        native_request request, boost::asio::any_completion_handler<count_signature> handler
    );
};

}  // namespace agentctx::providers
