// The session actor: one conversation's log, store and snapshot, owned by one strand.
#pragma once

#include <agentctx/compaction/cut_point.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/required.hpp>
#include <agentctx/compaction/redaction.hpp>
#include <agentctx/compaction/request_view.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/settings.hpp>
#include <agentctx/providers/summarizer.hpp>
#include <agentctx/runtime/branch_hooks.hpp>
#include <agentctx/runtime/conversation_request.hpp>
#include <agentctx/runtime/checkpoint.hpp>
#include <agentctx/runtime/events.hpp>
#include <agentctx/runtime/preserved_evidence.hpp>
#include <agentctx/runtime/snapshot.hpp>
#include <agentctx/runtime/store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace spdlog {
class logger;
}

namespace agentctx::runtime {

namespace detail {
class session_core;
}  // namespace detail

/// The model the session talks to (for thresholds, the same-model guard and output caps).
struct model_identity
{
    std::string provider;
    std::string model_id;
    std::int64_t context_window = 0;
    std::int64_t max_output_tokens = 0;  ///< 0 = no model limit on summary output caps
    /// The model's own `compaction.modelOverrides` (reserveTokens, keepRecentTokens), applied while
    /// the session serves it; nullopt = the session's settings. load_host_config fills them.
    std::optional<std::int64_t> reserve_tokens;
    std::optional<std::int64_t> keep_recent_tokens;
};

struct session_config
{
    compaction::compaction_settings settings;
    model_identity model;
    std::shared_ptr<providers::summarizer> summarizer;
    std::shared_ptr<spdlog::logger> logger;              ///< nullptr = spdlog's default logger
    const compaction::token_counter* counter = nullptr;  ///< nullptr = chars/4
    compaction::load_options load;
    /// Send a split turn's history and turn-prefix requests at once. Off by default, as Pi 1.6:
    /// single-slot local servers answer 429 to parallel requests.
    bool concurrent_summaries = false;
    /// Secrets are replaced with `[REDACTED:<rule>]` in everything sent to the summarizer and
    /// in the summary before it is committed; counts go to `details.agentctx.redactions`.
    compaction::redaction_settings redaction;
    /// Entries kept verbatim through every compaction (by id, `customType` or predicate): never
    /// summarized, carried by each compaction that covers them and shown right after its summary.
    compaction::pin_policy pins;
    /// Entries that are never summarized (by id, `customType` or predicate): the cut stays at or
    /// before the oldest one after the previous compaction. A compaction they leave nothing to
    /// summarize fails with compaction `budget_exceeded` and writes nothing.
    compaction::required_policy required;
    /// Queued background jobs (agentctx mode): which tool calls launch one, where its id is read
    /// and which later entry completes it. While a job runs, its launch exchange is carried
    /// verbatim through every compaction, the summary lists it, and context() answers its
    /// unanswered call with a still-running note; once complete, the launch is ordinary history.
    compaction::job_rules jobs;
    /// The `{provider, model}` a checkpoint is bound to: the model the host's loop talks to
    /// (a temporary pin included), asked at each compaction, export and restore on the strand;
    /// it must not block. Empty = the summarizer's name (`provider:model`).
    std::function<compaction::checkpoint_identity()> checkpoint_identity;
    /// The host's evidence store (preserved_evidence.hpp): given the complete original entries of
    /// the range before it is summarized; a refusal stops the compaction (`evidence_refused`).
    preserve_evidence_fn preserve_evidence;
    /// Piecewise summaries: called with each completed piece before the next begins (progress.hpp).
    persist_checkpoint_fn persist_checkpoint;
    /// Also keep each completed piece in the session file, as a `custom` entry of customType
    /// `agentctx.compaction_progress` (Pi ignores it in context); a later pass resumes from it.
    bool progress_in_session = true;
    /// A piece the host kept through persist_checkpoint in an earlier process, handed back: the
    /// next compaction resumes from it like from a progress entry (checked the same way; a
    /// refusal is named in `progressRejected`) when the file holds no newer progress entry.
    std::optional<compaction::progress_record> saved_progress;
    /// `pi`: plan every compaction as Pi 1.6.0 does (its cut points, without agentctx's fixes);
    /// what `agentctx simulate --policy pi` replays. Default: agentctx.
    compaction::compat_mode compat = compaction::compat_mode::agentctx;
    /// Cache-friendly summary requests (`compaction.summaryRequest`): what the conversation's
    /// requests begin with, asked on the strand when a compaction builds one. Empty (or nullopt)
    /// = the replayed system prompt as text, no tools, agentctx's own wire view of context().
    std::function<std::optional<conversation_request>()> conversation;
    /// The models the host knows (the settings' `models` section): a `model_change` entry naming
    /// one of them by `provider` and `modelId` (appended, or found on the active path at open or
    /// refresh) switches the serving model (session::serving_model()). An entry naming a model
    /// not listed here switches nothing. A switch to a smaller window the context does not fit
    /// compacts first, with the previous model's budgets (session::async_change_model).
    std::vector<model_identity> models;
};

/// What a trigger or a compaction did.
struct compaction_outcome
{
    bool attempted = false;  ///< a compaction was started
    bool compacted = false;  ///< and committed
    std::optional<compaction_reason> reason;
    bool will_retry = false;  ///< overflow path: the host should retry its request now
    std::optional<compaction::compaction_result> result;
    std::string entry_id;  ///< the new compaction entry
    std::string message;   ///< why nothing was done, or why it failed (safe text)
    /// async_adopt_compaction only: the provider's compaction item became the entry's native
    /// state. False for a committed adoption that a before_compact hook answered with its own
    /// result (`not_adopted` is then `hook_result`): the entry holds the hook's summary and no
    /// native state.
    bool adopted = false;
    /// Why a committed adoption did not adopt the item (`hook_result`); empty otherwise.
    std::string not_adopted;
};

using outcome_signature = void(boost::system::error_code, compaction_outcome);
using append_signature = void(boost::system::error_code, std::string);
using void_signature = void(boost::system::error_code);

/// What an append of several messages did: the new ids in order, or why it was refused.
struct append_batch_result
{
    std::vector<std::string> ids;
    std::string reason;  ///< on failure: the refused message's index, field and why (safe text)
};
using append_batch_signature = void(boost::system::error_code, append_batch_result);

/// What a history replacement did (session::async_replace_history).
struct replace_history_result
{
    bool changed = false;    ///< something was written (false: the messages were the context's)
    std::size_t shared = 0;  ///< leading messages of the list that matched the context
    /// The entry the new branch grows from (the last entry both branches share); empty for a new
    /// root, or when nothing changed.
    std::string fork_id;
    std::string old_leaf_id;       ///< the leaf before the replacement (its branch stays in the log)
    std::vector<std::string> ids;  ///< the new entries, in order
    std::string reason;            ///< on failure: which message and field, or why (safe text)
};
using replace_history_signature = void(boost::system::error_code, replace_history_result);
using request_view_signature = void(boost::system::error_code, compaction::fit_result);
/// An entry as stored: its JSON object (empty on failure).
using original_signature = void(boost::system::error_code, boost::json::object);

/**
 * @brief One conversation. All state lives on one strand; readers take snapshot() from any thread.
 *
 * Operations are Asio-style: `async_x(args..., CompletionToken)`; the handler never runs inside
 * the initiating call. A failed, cancelled or invalid compaction leaves the store and the
 * snapshot exactly as they were; a successful one appends one compaction entry and swaps the
 * snapshot with no suspension point between validation and swap.
 *
 * @par Object lifetimes
 * Created through open()/create() as a shared_ptr; operations keep it alive until they complete.
 * close() cancels in-flight work and refuses new operations.
 *
 * @par Thread safety
 * Distinct objects: safe. Shared objects: every member function is safe to call from any thread.
 */
class session : public std::enable_shared_from_this<session>
{
public:
    using executor_type = boost::asio::any_io_executor;

    /// Opens the session held by `store` (blocking read; do it before serving requests).
    static compaction::result<std::shared_ptr<session>> open(
        executor_type ex,
        std::unique_ptr<store> st,
        session_config config,
        compaction::diagnostics& diag,
        compaction::load_report* report = nullptr
    );

    /// Writes `header` to an empty store and opens it.
    static compaction::result<std::shared_ptr<session>> create(
        executor_type ex,
        std::unique_ptr<store> st,
        const compaction::session_header& header,
        session_config config,
        compaction::diagnostics& diag
    );

    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    /// The current snapshot: lock-free, from any thread.
    std::shared_ptr<const snapshot> current() const noexcept;

    /// The context for the next request: the snapshot's messages, with an unknown-outcome
    /// observation answering each unresolved tool call (history is not edited; the running
    /// batch is left alone). `current()->messages` is the projection itself.
    std::vector<compaction::context_message> context() const;

    executor_type get_executor() const noexcept;

    /**
     * @brief Appends an entry as a child of the leaf: `fields` holds `type` and the type's fields
     * (`{"type":"message","message":{...}}`); id, parentId and timestamp are assigned.
     * Completes with the new id once the line is in the store. A refused entry completes with
     * the error and, in the string, the reason naming the field (`customType`, `id`, ...).
     * Entries of the runtime's own `agentctx.*` custom types are refused (`reserved_type`).
     * @par Per-operation cancellation
     * None: an append is short and is either done or not started.
     */
    template <boost::asio::completion_token_for<append_signature> CompletionToken>
    auto async_append(boost::json::object fields, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<append_signature>(
            token, shared_from_this(), &session::append_impl, std::move(fields)
        );
    }

    /**
     * @brief As above; a refused entry also fills `diag` before the handler runs: `diag.field` is
     * the path of the field at fault (`message.role`), `diag.message` the whole sentence (the
     * string the handler gets). A store failure fills `diag.message` only. `diag` is cleared
     * first and must outlive the operation.
     */
    template <boost::asio::completion_token_for<append_signature> CompletionToken>
    auto async_append(boost::json::object fields, compaction::diagnostics& diag, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<append_signature>(
            token, shared_from_this(), &session::append_diag_impl, std::move(fields), &diag
        );
    }

    /**
     * @brief Switches the session to `model`: appends Pi's `model_change` entry (`provider`,
     * `modelId`) as a child of the leaf and completes with its id, once durable; the session then
     * knows `model` (as if listed in session_config::models) and serves it (serving_model()).
     * Model downshift (agentctx mode): when `model`'s window is smaller than the previous model's
     * and the context exceeds `model`'s automatic threshold, the next automatic check
     * (async_before_prompt, async_on_turn_end, async_between_turns, async_recover_overflow) first
     * compacts with reason `model_change`, sized for the previous model's window and output cap,
     * before thresholds use `model`; when the context still does not fit `model`'s
     * `contextWindow − reserveTokens` it fails with `model_window_exceeded` and emits
     * budget_exceeded_event with the numbers. `--compat pi` never downshifts (Pi 1.6 does not):
     * serving_model() follows the change, thresholds and budgets stay session_config::model's.
     * @par Per-operation cancellation
     * None: it is an append.
     */
    template <boost::asio::completion_token_for<append_signature> CompletionToken>
    auto async_change_model(model_identity model, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<append_signature>(
            token, shared_from_this(), &session::change_model_impl, std::move(model)
        );
    }

    /// The model the session serves: session_config::model until a `model_change` entry of a
    /// known model switches it (async_change_model, an append, or the active path at open or
    /// refresh). From any thread.
    model_identity serving_model() const;

    /**
     * @brief Appends Pi messages (`{"role": …}` objects) as `message` entries, each the child of
     * the one before, as one batch: every message is validated before the first is written, and
     * no other write of the session comes between them. A refused message fails the batch with
     * nothing written; `reason` names its index, field and why (`[2] field 'message.content': …`).
     * The store writes the batch in one step (store::async_write_batch): a store failure (a full
     * disk, another node writing a shared session first) leaves none of it, in file and snapshot.
     * @par Per-operation cancellation
     * None: like a single append, it is short and is either done or not started.
     */
    template <boost::asio::completion_token_for<append_batch_signature> CompletionToken>
    auto async_append_messages(std::vector<boost::json::object> messages, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<append_batch_signature>(
            token, shared_from_this(), &session::append_messages_impl, std::move(messages)
        );
    }

    /**
     * @brief Replaces the conversation with `messages` (Pi message objects, `{"role": …}`), for a
     * host that owns its transcript (an edited prompt, a retried reply, a rewritten tool result).
     * The log stays append-only: the list is compared with the context (what context() shows,
     * docs/embedding.md "History replacement"), the leaf moves to the last entry both share and
     * the differing tail is appended there as one batch (a new branch; the old one stays in the
     * log and readable). A list that only shortens the context writes one
     * `agentctx.history_replaced` custom entry there, so the move survives a reopen. Identical
     * messages write nothing (`changed` false). Every message is decoded before anything is
     * written: a bad one fails with the compaction code and `reason` naming `[index]` and field.
     * A list that differs inside the latest compaction's summary (its summary, carried entries,
     * or a shorter list) is refused with `summarized_history` and writes nothing. Writes take the
     * same write turn and store batch as async_append_messages.
     * @par Per-operation cancellation
     * None: like an append, it is either done or not started.
     */
    template <boost::asio::completion_token_for<replace_history_signature> CompletionToken>
    auto async_replace_history(std::vector<boost::json::object> messages, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<replace_history_signature>(
            token, shared_from_this(), &session::replace_history_impl, std::move(messages)
        );
    }

    /**
     * @brief The entry `entry_id` exactly as the session holds it, whatever context edits later
     * did to its contribution: what a tool result cleared by `compaction.clearToolResults` said.
     * Fails with `entry_not_found` for an unknown id. Reads only.
     * @par Per-operation cancellation
     * None: it is one lookup.
     */
    template <boost::asio::completion_token_for<original_signature> CompletionToken>
    auto async_original(std::string entry_id, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<original_signature>(
            token, shared_from_this(), &session::original_impl, std::move(entry_id)
        );
    }

    /**
     * @brief The post-run check with the run's final assistant message (Pi 1.6): overflow or
     * early-`length` recovery (once: the failed attempt is omitted with persisted `context_edit`
     * entries, then the session compacts with `will_retry`, and the host retries its request from
     * the new snapshot; if the compaction fails the omissions stay), a silent overflow
     * (compaction without retry), or a threshold compaction. Aborted responses are skipped.
     *
     * With background compaction on (`compaction.background`, the default in agentctx mode), a
     * turn that ends above `startAt × threshold` starts one and completes at once (`reason`
     * `background`, not compacted); at the threshold a prepared result is committed with no model
     * call and a running one is awaited (docs/background.md).
     * @par Per-operation cancellation
     * `terminal`: cancels a compaction this check started (completes with `cancelled`). A check
     * awaiting a background compaction (`terminal`, `partial` or `total`) ends only its own wait.
     */
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_on_turn_end(compaction::message last_assistant, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token, shared_from_this(), &session::check_impl, std::move(last_assistant), true
        );
    }

    /**
     * @brief The post-run check for the latest assistant message the session holds (the reply
     * the host just appended; nothing to pass). Otherwise as the overload above; with no
     * assistant message yet it completes without compacting and says so.
     * @par Per-operation cancellation
     * `terminal`: cancels a compaction this check started (completes with `cancelled`).
     */
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_on_turn_end(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token, shared_from_this(), &session::turn_end_impl
        );
    }

    /**
     * @brief The mid-run check (Pi 1.6): call after a tool batch's results are
     * appended and before the next assistant request of the same run; skip it when the batch
     * ends the run. Compacts (reason `threshold`) when the projected estimate — last usage plus
     * the new results — is over `contextWindow - reserveTokens`; the next request is then built
     * from the new snapshot.
     * @par Per-operation cancellation
     * `terminal`: cancels a compaction this check started (completes with `cancelled`).
     */
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_between_turns(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token, shared_from_this(), &session::between_turns_impl
        );
    }

    /// The pre-prompt check (includes aborted responses). Cancellation as async_on_turn_end.
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_before_prompt(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token, shared_from_this(), &session::before_prompt_impl
        );
    }

    /// The overflow path for a provider error that was not persisted as a message. Completes
    /// with `not_overflow` when the error is not a context overflow. Cancellation as above.
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_recover_overflow(std::string error_message, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token, shared_from_this(), &session::recover_overflow_impl, std::move(error_message)
        );
    }

    /**
     * @brief The manual path (`/compact [instructions]`). Raises the turn-abort signal first, aborts
     * a running automatic compaction, and runs its own. Concurrent manual calls share one
     * compaction: later callers wait for the first one's result.
     * @par Per-operation cancellation
     * `terminal`: for the first caller, the compaction stops at once (the model request is
     * cancelled) and completes with `cancelled`; for a joined caller, only its wait ends.
     */
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_compact(std::optional<std::string> custom_instructions, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token, shared_from_this(), &session::compact_impl, std::move(custom_instructions)
        );
    }

    /**
     * @brief Adopts a compaction the provider made inside the loop's own request: OpenAI's inline
     * compaction answers a `/responses` request that carries `context_management` with a
     * `compaction` output item, which stands for everything that request sent. `item` is that
     * item as returned; `first_kept_entry_id` is the first entry of the reply that carried it
     * (appended before this call). The compaction entry cuts there, records
     * `{"provider":"openai","model":<serving model>,"output":[item]}` as its native state
     * (replayed verbatim by to_responses_input afterwards) and gets a portable summary of the
     * prefix from the summarizer, as the session's own OpenAI native compaction does; no native
     * request is sent. It commits under the rules of any compaction (validated, then swapped;
     * a failure writes nothing). Refused with `compaction_running` while a compaction runs;
     * `stale_plan` when the plan cannot cut at `first_kept_entry_id`; `native_invalid` (the
     * providers code) when the item is not one `compaction` item with an `encrypted_content`;
     * `not_configured` (the providers code) when the summarizer does not use OpenAI inline
     * compaction (its capabilities' `inline_compaction`: no view advertised the threshold).
     * A before_compact hook that supplies its own result wins: that result is committed (no
     * native state) and the outcome has `adopted` false, `not_adopted` `hook_result`.
     * @par Per-operation cancellation
     * `terminal`: as async_compact's first caller.
     */
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_adopt_compaction(
        boost::json::object item, std::string first_kept_entry_id, CompletionToken&& token
    )
    {
        return async_adopt_compaction(
            std::move(item),
            std::move(first_kept_entry_id),
            std::nullopt,
            std::forward<CompletionToken>(token)
        );
    }

    /**
     * @brief async_adopt_compaction for a host that appended entries between building the
     * request and appending its reply (a steering message, a tool result from another path):
     * `covered_leaf_id` is the leaf the request's input was built at (the `leafId` of the view it
     * came from). The item covers the path up to that entry; the compaction cuts at the entry
     * after it, so the entries appended meanwhile stay after the compaction with the reply,
     * exactly as background compaction keeps them. `first_kept_entry_id` (the reply's first
     * entry) must come after it. Refused with `adoption_invalid_cut`, nothing written, when the
     * covered leaf is not on the active path, the reply does not follow it, or the entry after it
     * is not a valid cut (a tool result, inside a tool round, past a required entry). Without a
     * covered leaf (std::nullopt) it is the overload above.
     */
    template <boost::asio::completion_token_for<outcome_signature> CompletionToken>
    auto async_adopt_compaction(
        boost::json::object item,
        std::string first_kept_entry_id,
        std::optional<std::string> covered_leaf_id,
        CompletionToken&& token
    )
    {
        return ::agentctx::detail::async_call<outcome_signature>(
            token,
            shared_from_this(),
            &session::adopt_compaction_impl,
            std::move(item),
            std::move(first_kept_entry_id),
            std::move(covered_leaf_id)
        );
    }

    /**
     * @brief The request a budget allows (compaction::fit_request over the current context): the
     * newest whole interaction groups that fit, never dropping a required entry (the session's
     * `required` policy, and `budget.required`). When what must stay does not fit, the view keeps
     * it anyway, `shortfall` holds the numbers and the session emits budget_exceeded_event with
     * `request_view` set (on the strand, before the handler runs).
     * @par Per-operation cancellation
     * None: it reads the snapshot.
     */
    template <boost::asio::completion_token_for<request_view_signature> CompletionToken>
    auto async_request_view(compaction::request_budget budget, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<request_view_signature>(
            token, shared_from_this(), &session::request_view_impl, std::move(budget)
        );
    }

    /**
     * @brief Pi 1.6's tree navigation: the leaf moves to `entry_id`, or to its parent when it is a
     * user message or a custom message (whose text the host puts back in its editor). With
     * `summarize`, the branch being left (from the leaf back to the entry it shares with
     * `entry_id`'s path) is summarized first, as Pi does (its prompt, preamble, file lists and
     * budget: the window minus 16384), and a `branch_summary` entry (`fromId` the old leaf, the
     * summary call's `usage`, `fromHook` false) is written as the new leaf's child; a branch with
     * no message gets "No content to summarize" without a model call. Completes with that entry's
     * id (empty when none was written). Refused while a compaction runs (`compaction_running`); a
     * failed summary moves nothing and writes nothing; an append while it runs makes it
     * `stale_plan`.
     * @par Per-operation cancellation
     * `terminal`: stops the summary request; completes with `cancelled`, nothing moved or written.
     */
    template <boost::asio::completion_token_for<append_signature> CompletionToken>
    auto async_branch_from(std::string entry_id, bool summarize, CompletionToken&& token)
    {
        return async_branch_from(
            std::move(entry_id), branch_options{.summarize = summarize}, std::forward<CompletionToken>(token)
        );
    }

    /**
     * @brief Pi 1.6's tree navigation in full, as above, in Pi's order: the before_branch hooks
     * (on_before_branch: they see the branch being left and may cancel, supply the summary, or
     * override the instructions and label), the summary request (the session's thinking level
     * as `reasoning_effort`; `custom_instructions` appended as `Additional focus: …` or, with
     * `replace_instructions`, instead of the branch prompt), the leaf's move (reset to none for
     * the first user message), the summary entry, a `label` entry (on the summary entry, else on
     * the target), then the branched hooks. A hook's cancel completes with `hook_cancelled`,
     * nothing moved or written. Completes with the summary entry's id (empty when none).
     * @par Per-operation cancellation
     * `terminal`: stops a before_branch hook's wait or the summary request; completes with
     * `cancelled`, nothing moved or written.
     */
    template <boost::asio::completion_token_for<append_signature> CompletionToken>
    auto async_branch_from(std::string entry_id, branch_options options, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<append_signature>(
            token, shared_from_this(), &session::navigate_impl, std::move(entry_id), std::move(options)
        );
    }

    /// Moves the leaf to an earlier entry (Pi's tree navigation). Not persisted, as in Pi.
    template <boost::asio::completion_token_for<void_signature> CompletionToken>
    auto async_branch_from(std::string entry_id, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<void_signature>(
            token, shared_from_this(), &session::branch_impl, std::move(entry_id)
        );
    }

    /**
     * @brief Exports the latest compaction on the active path as a portable checkpoint record
     * (compaction/checkpoint.hpp). Fails with `checkpoint_unavailable` (reason `no_compaction` or
     * `unrecorded`) or `checkpoint_mismatch` (`replaced`: its covered history changed since).
     * Writes nothing.
     * @par Per-operation cancellation
     * None: it is short and reads only.
     */
    template <boost::asio::completion_token_for<checkpoint_signature> CompletionToken>
    auto async_export_checkpoint(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<checkpoint_signature>(
            token, shared_from_this(), &session::export_checkpoint_impl
        );
    }

    /**
     * @brief Restores a checkpoint record (its JSON): validates it (`checkpoint_invalid`:
     * `corrupt`, `unsupported_format`), checks it against this session (`checkpoint_mismatch`:
     * `other_identity`, `other_configuration`, `shortened`, `replaced`), then appends one
     * ordinary compaction entry as the new leaf, keeping from the first entry after the covered
     * prefix. A refusal writes nothing; so does a call while a compaction runs
     * (`compaction_running`). No compaction events or hooks run.
     * @par Per-operation cancellation
     * None: validation and the one append run at once on the strand.
     */
    template <boost::asio::completion_token_for<checkpoint_signature> CompletionToken>
    auto async_restore_checkpoint(boost::json::value record, CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<checkpoint_signature>(
            token, shared_from_this(), &session::restore_checkpoint_impl, std::move(record)
        );
    }

    /// The latest compaction's checkpoint status (checkpoint_status_of against this session's
    /// identity and configuration). Reads only. No per-operation cancellation.
    template <boost::asio::completion_token_for<checkpoint_status_signature> CompletionToken>
    auto async_checkpoint_status(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<checkpoint_status_signature>(
            token, shared_from_this(), &session::checkpoint_status_impl
        );
    }

    /**
     * @brief Reloads the session from a shared store (another node appended or compacted) and
     * swaps the snapshot; emits remote_change_event when there was something new. Waits for an
     * in-flight write first. A store with a single writer has nothing to reload: completes at once.
     * @par Per-operation cancellation
     * None: it is one read.
     */
    template <boost::asio::completion_token_for<void_signature> CompletionToken>
    auto async_refresh(CompletionToken&& token)
    {
        return ::agentctx::detail::async_call<void_signature>(
            token, shared_from_this(), &session::refresh_impl
        );
    }

    /// Cancels the in-flight compaction, if any (it completes with `cancelled`).
    void abort_compaction();

    /// Cancels in-flight work and refuses further operations (`session_closed`).
    void close();

    /// The turn-abort signal's slot: bind the host's in-flight model call to it. A manual
    /// compaction emits `terminal` on it first. Use on the session's strand.
    boost::asio::cancellation_slot turn_abort_slot();

    /// Registration; call before running operations (not synchronized with them).
    void on_event(event_listener l);
    void on_before_compact(before_compact_hook h);
    void on_before_compact(async_before_compact_hook h);
    /// compacted and compact_failed hooks: synchronous, or awaitable (events.hpp): the operation
    /// completes after they finish.
    void on_compacted(compacted_hook h);
    void on_compacted(async_compacted_hook h);
    void on_compact_failed(compact_failed_hook h);
    void on_compact_failed(async_compact_failed_hook h);
    /// Tree navigation (async_branch_from with options or a summary), as Pi's session_before_tree
    /// and session_tree: see branch_hooks.hpp.
    void on_before_branch(before_branch_hook h);
    void on_before_branch(async_before_branch_hook h);
    void on_branched(branched_hook h);
    void on_branched(async_branched_hook h);

    /// Any callable: one returning an awaitable is registered as the awaitable hook, one returning
    /// void as the synchronous one (a lambda converts to both std::function types).
    template <class F>
    requires std::invocable<F&, const compacted_event&>
    void on_compacted(F f)
    {
        on_compacted(hook_of<compacted_hook, async_compacted_hook, compacted_event>(std::move(f)));
    }
    template <class F>
    requires std::invocable<F&, const compact_failed_event&>
    void on_compact_failed(F f)
    {
        on_compact_failed(
            hook_of<compact_failed_hook, async_compact_failed_hook, compact_failed_event>(std::move(f))
        );
    }
    template <class F>
    requires std::invocable<F&, const branched_event&>
    void on_branched(F f)
    {
        on_branched(hook_of<branched_hook, async_branched_hook, branched_event>(std::move(f)));
    }

    /// The configuration as given to open() (a model switch shows in serving_model()).
    const session_config& config() const noexcept;

private:
    explicit session(std::shared_ptr<detail::session_core> core);

    template <class Sync, class Async, class Event, class F>
    static auto hook_of(F f)
    {
        if constexpr (std::is_void_v<std::invoke_result_t<F&, const Event&>>)
            return Sync(std::move(f));
        else
            return Async(std::move(f));
    }

    // Each forwards to the core, which keeps itself alive until the operation completes.
    void append_impl(boost::json::object fields, boost::asio::any_completion_handler<append_signature> h);
    void append_diag_impl(
        boost::json::object fields,
        compaction::diagnostics* diag,
        boost::asio::any_completion_handler<append_signature> h
    );
    void append_messages_impl(
        std::vector<boost::json::object> messages,
        boost::asio::any_completion_handler<append_batch_signature> h
    );
    void change_model_impl(model_identity model, boost::asio::any_completion_handler<append_signature> h);
    void replace_history_impl(
        std::vector<boost::json::object> messages,
        boost::asio::any_completion_handler<replace_history_signature> h
    );
    void refresh_impl(boost::asio::any_completion_handler<void_signature> h);
    void original_impl(std::string entry_id, boost::asio::any_completion_handler<original_signature> h);
    void between_turns_impl(boost::asio::any_completion_handler<outcome_signature> h);
    void check_impl(
        compaction::message m, bool skip_aborted, boost::asio::any_completion_handler<outcome_signature> h
    );
    void turn_end_impl(boost::asio::any_completion_handler<outcome_signature> h);
    void before_prompt_impl(boost::asio::any_completion_handler<outcome_signature> h);
    void recover_overflow_impl(std::string error, boost::asio::any_completion_handler<outcome_signature> h);
    void adopt_compaction_impl(
        boost::json::object item,
        std::string first_kept,
        std::optional<std::string> covered_leaf,
        boost::asio::any_completion_handler<outcome_signature> h
    );
    void compact_impl(
        std::optional<std::string> instr, boost::asio::any_completion_handler<outcome_signature> h
    );
    void branch_impl(std::string id, boost::asio::any_completion_handler<void_signature> h);
    void navigate_impl(
        std::string id, branch_options opts, boost::asio::any_completion_handler<append_signature> h
    );
    void request_view_impl(
        compaction::request_budget budget, boost::asio::any_completion_handler<request_view_signature> h
    );
    void export_checkpoint_impl(boost::asio::any_completion_handler<checkpoint_signature> h);
    void restore_checkpoint_impl(
        boost::json::value record, boost::asio::any_completion_handler<checkpoint_signature> h
    );
    void checkpoint_status_impl(boost::asio::any_completion_handler<checkpoint_status_signature> h);

    /// The state and the operations (runtime/src/session_core.hpp).
    std::shared_ptr<detail::session_core> core_;
};

}  // namespace agentctx::runtime
