// The compaction run: plan, hooks, summarize, revalidate, build, commit — each step returns its failure.
#include "compaction_run.hpp"

#include "checkpoint_fields.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/jobs.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/record_checks.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/multiple_exceptions.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

namespace {

long long elapsed_ms(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since)
        .count();
}

// An operation of the session or its store, as an awaitable with the given token.
template <class Signature, class Initiation, class Token>
auto awaited(Initiation init, Token token)
{
    return asio::async_initiate<Token, Signature>(std::move(init), token);
}

// Required entries, or the summary's room, hold the cut: the host hears the numbers (never
// content) before the failure. The allowance is the limit that started the compaction: the
// working budget when it triggered, else contextWindow - reserveTokens.
void report_shortfall(const run_context& cx, compaction_reason reason, const budget_shortfall& b)
{
    cx.emit(budget_exceeded_event{
        .reason = reason,
        .input_tokens = b.input_tokens,
        .allowance = cx.budgets().allowance(reason),
        .required_tokens = b.required_tokens,
        .boundary_entry_id = b.boundary_entry_id,
        .required_entry_id = b.required_entry_id,
        .boundary_position = b.boundary_position,
        .required_position = b.required_position,
        .summary_tokens = b.summary_tokens,
    });
}

// Thrown only between request_or_throw and the `&&` that awaits it (see compaction_run.hpp).
struct request_failed
{};

}  // namespace

compaction_run::compaction_run(run_context cx, std::shared_ptr<compaction_job> job)
    : cx_(std::move(cx)), job_(std::move(job)), j_(*job_)
{}

asio::awaitable<compaction_run::result_type> compaction_run::run(
    [[maybe_unused]] std::shared_ptr<const void> keep_alive,
    run_context cx,
    std::shared_ptr<compaction_job> job
)
{
    // The frame owns the session's parts (keep_alive) and the run, until the run completes.
    compaction_run r(std::move(cx), std::move(job));
    co_return co_await r.go();
}

asio::awaitable<compaction_run::result_type> compaction_run::go()
{
    // Cancellation is checked explicitly between steps: it completes as `cancelled`, and must
    // never surface as an exception from the next co_await.
    co_await asio::this_coro::throw_if_cancelled(false);
    // A background compaction prepares and holds its result (run_background.cpp); the next
    // automatic operation commits a prepared one if its prefix still holds.
    if (j_.request.reason == compaction_reason::background && !j_.request.prepared_only)
        co_return co_await run_background(job_);
    if (auto used = co_await use_prepared())
        co_return std::move(*used);
    // Pi 1.6: an automatic compaction announces itself only once it has a preparation.
    if (j_.request.reason == compaction_reason::manual)
        emit_start();
    std::optional<step<committed>> r;
    try
    {
        r.emplace(co_await attempt());
    }
    catch (const std::exception& e)
    {
        // Not control flow: an allocation failure, or a library that threw.
        r.emplace(boost::system::in_place_error, failure{make_error_code(errc::io_error), e.what()});
    }
    if (*r)
        co_return co_await succeed(j_, std::move(**r));
    if (r->error().silent)
    {
        // A paused compaction says so to its caller; nothing else does (no events, no hooks).
        const auto ec = r->error().ec == errc::auto_compaction_paused ? r->error().ec : error_code{};
        co_return result_type{
            ec,
            j_.prepared_commit.value_or(compaction_outcome{
                .reason = j_.request.reason, .message = r->error().message})};
    }
    emit_start();
    co_return co_await fail(j_, r->error());
}

asio::awaitable<compaction_run::step<compaction_run::committed>> compaction_run::attempt()
{
    // 1-4. Plan, hold the lease, run the hooks, summarize; still wanted.
    auto r = co_await plan_and_summarize();
    if (!r)
        co_return r.error();
    auto& [p, lease, sum, first_kept] = *r;

    // 5-7. In the write turn, with no suspension point but the store's write: still wanted and
    // open (a cancellation or close() that came while another write held the turn writes
    // nothing), still valid against the current leaf, the result validated against the current
    // path, then committed.
    const auto cs = co_await asio::this_coro::cancellation_state;
    auto e = co_await commit([&, cs]() -> step<std::optional<commit_input>> {
        if (!still_wanted(cs.cancelled()))
            return failure{make_error_code(errc::cancelled), "cancelled"};
        if (cx_.closed())
            return failure{make_error_code(errc::session_closed), "the session was closed"};
        auto now = revalidate(p, first_kept);
        if (!now)
            return now.error();
        auto result = build(p, *now, sum);
        if (!result)
            return result.error();
        return commit_input{std::move(*now), std::move(*result), &j_, &sum};
    });
    if (!e)
        co_return e.error();
    co_return std::move(**e);
}

asio::awaitable<compaction_run::step<compaction_run::summarized>> compaction_run::plan_and_summarize(
    const compaction_settings* settings
)
{
    // 1. Plan against the current leaf.
    auto p = plan_compaction(settings);
    if (!p)
        co_return p.error();
    fold_oversized_turn_prefix(*p);
    if (auto paused = check_paused(*p); !paused)
        co_return paused.error();
    // 1b. A shared store: hold the session's lease before anything is summarized or written.
    auto lease = co_await take_lease();
    if (!lease)
        co_return lease.error();
    emit_start();
    cx_.logger().debug(
        "compaction plan: first kept {}, {} to summarize, {} in turn prefix",
        p->prep.first_kept_entry_id,
        p->prep.messages_to_summarize.size(),
        p->prep.turn_prefix_messages.size()
    );

    // 2. before_compact hooks, in registration order.
    auto custom = co_await before_hooks(*p);
    if (!custom)
        co_return custom.error();

    // 2a. A hook's cut is checked as the plan's own would be: an invalid one writes nothing.
    const bool hook_kept = *custom && !(*custom)->result.first_kept_entry_id.empty();
    std::string first_kept = hook_kept ? (*custom)->result.first_kept_entry_id : p->prep.first_kept_entry_id;
    if (hook_kept)
        if (auto cut = check_hook_cut(*p, first_kept); !cut)
            co_return cut.error();

    // 2b. The host's evidence store keeps the original range before anything is summarized.
    auto evidence = co_await preserve_evidence(first_kept);
    if (!evidence)
        co_return evidence.error();

    // 3. Summarize (or take the hook's result).
    auto sum = co_await summarize(*p, std::move(*custom));
    if (!sum)
        co_return sum.error();
    // 3b. The recall gate: what the span laid down that the summary must keep.
    if (auto gate = co_await recall_gate(*p, *sum); !gate)
        co_return gate.error();
    sum->evidence = std::move(*evidence);

    // 4. Cancelled while we waited? Closed? Nothing is written after a cancellation.
    if (!still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (cx_.closed())
        co_return failure{make_error_code(errc::session_closed), "the session was closed"};
    co_return summarized{std::move(*p), std::move(*lease), std::move(*sum), std::move(first_kept)};
}

asio::awaitable<compaction_run::step<std::shared_ptr<store_lease>>> compaction_run::take_lease()
{
    // A single-writer store's lease excludes nothing beyond the session's own lifecycle.
    auto [ec, lease, message] = co_await awaited<store_lease_signature>(
        [this](auto h) { cx_.writes().async_lease(std::move(h)); }, asio::as_tuple(asio::use_awaitable)
    );
    if (ec == asio::error::operation_aborted)
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    // Another node is compacting: a manual request fails fast, an automatic one skips quietly.
    if (ec == make_error_code(errc::compaction_in_progress))
        co_return failure{ec, message, false, j_.request.reason != compaction_reason::manual};
    if (ec)
        co_return failure{ec, message};
    co_return std::move(lease);
}

compaction_run::step<compaction_run::plan> compaction_run::plan_compaction(const compaction_settings* settings
)
{
    if (cx_.aborted(j_.id))
        return failure{make_error_code(errc::cancelled), "cancelled before it started"};
    if (!cx_.config().summarizer)
        return failure{make_error_code(errc::no_summarizer), "no summarizer is configured"};
    diagnostics diag;
    plan p;
    p.leaf = cx_.log().leaf_id();
    auto path = load_planning_path(cx_.log(), diag);
    if (!path)
        return failure{path.error(), diag.message};
    compaction::budget_shortfall shortfall;
    // A background cut keeps a split turn whole when the turn is no larger than what a foreground
    // cut keeps: its kept part grows until the commit anyway, and one summary request is saved.
    const std::int64_t whole_turn =
        j_.request.reason == compaction_reason::background ? cx_.budgets().keep_recent() : 0;
    // An adopted provider compaction covers everything before its reply: the plan keeps as
    // little as it may, which is that reply when the cut rules allow it (checked below).
    auto chosen = settings ? *settings : cx_.config().settings;
    if (j_.request.adopted)
    {
        chosen.keep_recent_tokens = 1;
        chosen.keep_recent_exchanges = 0;
    }
    plan_options opts{
        .mode = cx_.config().compat,
        .counter = &cx_.counter(),
        .pins = &cx_.config().pins,
        .required = &cx_.config().required,
        .jobs = &cx_.config().jobs,
        .shortfall = &shortfall,
        .context_window = cx_.config().model.context_window,
        .model_max_tokens = cx_.config().model.max_output_tokens,
        .reserve_summary_room = j_.request.reason != compaction_reason::background,
        .whole_turn_tokens = whole_turn};
    // An adoption that names the leaf its request was built at cuts right after it.
    const bool covered = j_.request.adopted && j_.request.adopted->covered_leaf;
    std::string keep_from;
    if (covered)
    {
        auto after = entry_after_covered(path->entries);
        if (!after)
            return after.error();
        keep_from = std::move(*after);
        opts.keep_from = &keep_from;
    }
    auto prep = prepare_compaction(path->entries, chosen, opts, diag);
    if (!prep && prep.error() == make_error_code(compaction::errc::budget_exceeded))
        report_shortfall(cx_, j_.request.reason, shortfall);
    if (covered && !prep && prep.error() == make_error_code(compaction::errc::boundary_unavailable))
        return failure{
            make_error_code(errc::adoption_invalid_cut),
            "the provider's compaction item cannot be adopted: it covers the history up to entry '" +
                *j_.request.adopted->covered_leaf + "', and the cut after it is refused: " + diag.message};
    if (!prep)
    {
        const bool nothing = prep.error() == make_error_code(compaction::errc::nothing_to_compact) ||
                             prep.error() == make_error_code(compaction::errc::already_compacted);
        return failure{
            prep.error(), diag.message, false, nothing && j_.request.reason != compaction_reason::manual};
    }
    if (j_.request.adopted && !covered && prep->first_kept_entry_id != j_.request.adopted->first_kept)
        return failure{
            make_error_code(errc::stale_plan),
            "the provider's compaction item cannot be adopted: it covers the history before entry '" +
                j_.request.adopted->first_kept + "', and the cut rules keep from '" +
                prep->first_kept_entry_id + "'"};
    p.path = std::move(path->entries);
    p.prep = std::move(*prep);
    return p;
}

compaction_run::step<std::string> compaction_run::entry_after_covered(
    const std::vector<compaction::entry_ptr>& path
) const
{
    const auto& a = *j_.request.adopted;
    const auto refuse = [&a](const std::string& why) {
        return failure{
            make_error_code(errc::adoption_invalid_cut),
            "the provider's compaction item cannot be adopted: its covered leaf '" + *a.covered_leaf + "' " +
                why};
    };
    const auto at = [&path](const std::string& id) {
        return std::find_if(path.begin(), path.end(), [&id](const entry_ptr& e) { return e->id == id; });
    };
    const auto leaf = at(*a.covered_leaf);
    if (leaf == path.end())
        return refuse("is not an entry of the active path");
    if (leaf + 1 == path.end())
        return refuse("is the session's leaf: nothing after it would be kept");
    // The reply that carried the item was appended after the request was built.
    if (const auto reply = at(a.first_kept); reply == path.end() || reply <= leaf)
        return refuse("does not come before the reply's entry '" + a.first_kept + "'");
    return (*(leaf + 1))->id;
}

compaction_run::step<void> compaction_run::check_paused(const plan& p)
{
    const auto kept = cx_.log().find(p.prep.first_kept_entry_id);
    if (!kept)
        return {};
    diagnostics diag;
    auto rev = cx_.ledger().revisions().compute(cx_.log(), entries_before(cx_.log(), *kept), diag);
    if (!rev)
        return {};  // unreadable prefix: the commit reports it
    j_.prefix = prefix_key{rev->count, std::move(rev->sha256), config_digest_of(cx_.config())};
    if (!cx_.ledger().suppression().paused(j_.request.reason, *j_.prefix))
        return {};
    return failure{
        make_error_code(errc::auto_compaction_paused),
        "the last automatic compaction of this history failed the same way it would now; "
        "paused until the history it covers or the settings change",
        false,
        true};
}

asio::awaitable<compaction_run::step<std::optional<compaction_run::hook_result>>>
compaction_run::before_hooks(const plan& p)
{
    std::optional<hook_result> custom;
    if (cx_.hooks().before_compact().empty())
        co_return custom;
    diagnostics diag;
    auto branch = compaction::read_active_path(cx_.log(), diag);
    if (!branch)
        co_return failure{branch.error(), diag.message};
    auto cs = co_await asio::this_coro::cancellation_state;
    for (const auto& h : cx_.hooks().before_compact())
    {
        const before_compact_event e{
            j_.request.reason, p.prep, j_.request.instructions, j_.request.will_retry, *branch, cs.slot()};
        before_compact_decision d;
        bool threw = false;
        try
        {
            d = co_await h(e);
        }
        catch (const std::exception& ex)
        {
            cx_.logger().error("before_compact hook threw, skipped: {}", ex.what());
            threw = true;
        }
        // Cancelled while a hook ran: nothing else runs, nothing is written.
        if (!still_wanted(cs.cancelled()))
            co_return failure{make_error_code(errc::cancelled), "cancelled"};
        if (threw)
            continue;
        if (d.cancel)
            co_return failure{
                make_error_code(errc::hook_cancelled), "cancelled by a before_compact hook", true};
        if (d.result)
            custom = hook_result{std::move(*d.result), d.usage};
    }
    co_return custom;
}

asio::awaitable<compaction_run::step<compaction_run::summaries>> compaction_run::summarize(
    const plan& p, std::optional<hook_result> custom
)
{
    summaries out;
    const scrub_fn scrub = [this, &out](std::string& text) {
        auto r = cx_.redaction().redact(text);
        for (const auto& [rule, n] : r.counts)
            out.redactions[rule] += n;
        text = std::move(r.text);
    };
    if (custom)
    {
        if (auto r = accept_hook_summary(std::move(*custom), scrub, out); !r)
            co_return r.error();
        co_return out;
    }
    // Native compaction first, where the provider offers it.
    auto native = co_await try_native(p);
    if (!native)
        co_return native.error();
    std::optional<usage> native_usage;
    if (*native)
    {
        native_usage = (*native)->usage;
        if (adopt_native_reply(std::move(**native), out))
            co_return out;
    }
    if (auto r = co_await summarize_portable(p, scrub, out); !r)
        co_return r.error();
    finish_portable(p.prep, native_usage, scrub, out);
    co_return out;
}

compaction_run::step<void> compaction_run::accept_hook_summary(
    hook_result hook, const scrub_fn& scrub, summaries& out
)
{
    j_.from_hook = true;
    if (j_.request.adopted)  // the hook's result wins: the provider's item is not the state
        j_.evidence.native_selection =
            "hook: a before_compact hook supplied the result; the provider's compaction item was not "
            "adopted";
    auto& custom = hook.result;
    // The hook's own call is billed as a summary call would be: the entry's usage, the end
    // event's and the finished event's evidence (whether or not the result commits).
    if (hook.usage)
    {
        j_.evidence.usage = combine_usage(j_.evidence.usage, *hook.usage);
        out.history_usage = hook.usage;
    }
    // Pi 1.6: the model's output limit, clamped so input and output fit the window.
    const auto& model = cx_.config().model;
    const auto cap = summary_output_budget(model.context_window, model.max_output_tokens, 0, 0);
    diagnostics d;
    if (auto r = check_summary_output({custom.summary, stop_reason::stop, std::nullopt}, cap, d); !r)
        return failure{r.error(), "hook result rejected: " + d.message, true};
    scrub(custom.summary);
    out.custom = std::move(custom);
    return {};
}

bool compaction_run::adopt_native_reply(providers::native_reply reply, summaries& out)
{
    out.native = providers::to_json(reply.state);
    j_.evidence.method = "native";
    if (!reply.readable)
        return false;  // OpenAI: the item is opaque; the entry's summary is a portable note
    // Anthropic: the block's content is the summary; it covers the turn prefix too.
    out.history = std::move(*reply.readable);
    out.history_usage = reply.usage;
    out.native_covers_window = true;
    return true;
}

asio::awaitable<compaction_run::step<void>> compaction_run::summarize_portable(
    const plan& p, const scrub_fn& scrub, summaries& out
)
{
    const auto& prep = p.prep;
    const bool need_prefix = prep.is_split_turn && !prep.turn_prefix_messages.empty();
    // agentctx: the conversation's own request first (no piecewise bound: it fits the window).
    auto cached =
        plan_cache_friendly(p, scrub, !prep.messages_to_summarize.empty() || !need_prefix, need_prefix);
    if (cached.history || cached.prefix)
        co_return co_await summarize_cache_friendly(p, scrub, std::move(cached), out);
    co_return co_await summarize_standalone(p, scrub, true, need_prefix, out);
}

asio::awaitable<compaction_run::step<void>> compaction_run::summarize_standalone(
    const plan& p, const scrub_fn& scrub, bool history, bool prefix, summaries& out
)
{
    const auto& prep = p.prep;
    const bool need_prefix = prefix;
    bool pieced = false;
    if (history)
    {
        auto r = co_await summarize_history_in_pieces(p, scrub, out);
        if (!r)
            co_return r.error();
        pieced = *r;
    }
    const bool need_history = history && !pieced && (!prep.messages_to_summarize.empty() || !need_prefix);
    auto prompts = request_prompts(prep, need_history, scrub);
    // Named, not temporaries: the prompts outlive each suspension in this frame.
    std::optional<summary_prompt> hp, pp;
    if (need_history)
        hp = std::move(prompts.first);
    if (need_prefix)
        pp = std::move(prompts.second);
    step<void> done;
    if (hp)
        out.history_request = *hp;  // the recall gate's follow-up continues this request
    if (pp)
        out.prefix_request = *pp;
    if (hp && pp && cx_.config().concurrent_summaries)
        done = co_await request_together(std::move(*hp), std::move(*pp), out);
    else
        done = co_await request_in_turn(std::move(hp), std::move(pp), out);
    co_return done;
}

asio::awaitable<compaction_run::step<bool>> compaction_run::summarize_history_in_pieces(
    const plan& p, const scrub_fn& scrub, summaries& out
)
{
    // The prefix is measured first (an exact count when offered); one over the bound (or with
    // progress to resume) goes out piece by piece.
    portable_bound bound;
    if (!p.prep.messages_to_summarize.empty())
    {
        auto b = co_await preflight(p);
        if (!b)
            co_return b.error();
        bound = *b;
    }
    auto pieces = choose_pieces(p, bound);
    if (!pieces)
        co_return pieces.error();
    if (!*pieces)
        co_return false;
    auto h = co_await summarize_pieces(p, std::move(**pieces), scrub);
    if (!h)
        co_return h.error();
    out.history = std::move(h->text);
    out.history_usage = h->usage;
    co_return true;
}

std::pair<summary_prompt, summary_prompt> compaction_run::request_prompts(
    const compaction_preparation& prep, bool need_history, const scrub_fn& scrub
)
{
    const auto& model = cx_.config().model;
    std::optional<std::string> effort;
    if (const auto snap = cx_.current(); snap->thinking_level != "off")
        effort = snap->thinking_level;
    // Only when the history goes out in one request: a piecewise prefix is never serialized whole.
    auto hp = need_history ? history_summary_prompt(
                                 messages_of(prep.messages_to_summarize),
                                 prep.previous_summary,
                                 j_.request.instructions,
                                 model.context_window,
                                 model.max_output_tokens
                             )
                           : summary_prompt{};
    auto pp = turn_prefix_summary_prompt(
        messages_of(prep.turn_prefix_messages),
        j_.request.instructions,
        model.context_window,
        model.max_output_tokens
    );
    hp.reasoning_effort = effort;
    pp.reasoning_effort = effort;
    hp.prompt += pinned_prompt_note(prep.pinned);
    pp.prompt += pinned_prompt_note(prep.pinned);
    // Secrets never reach the summarizer: the history is reference data.
    scrub(hp.prompt);
    scrub(pp.prompt);
    return {std::move(hp), std::move(pp)};
}

asio::awaitable<compaction_run::step<void>> compaction_run::request_together(
    summary_prompt hp, summary_prompt pp, summaries& out
)
{
    // Both at once (opt-in); the first failure cancels the other and is the one reported.
    using namespace asio::experimental::awaitable_operators;
    std::optional<failure> first;
    std::optional<std::tuple<summary_output, summary_output>> both;
    try
    {
        both.emplace(co_await (
            request_or_throw(std::move(hp), summary_kind::history, first) &&
            request_or_throw(std::move(pp), summary_kind::turn_prefix, first)
        ));
    }
    catch (const request_failed&)
    {}
    catch (const asio::multiple_exceptions&)
    {}
    if (!both)
        co_return first.value_or(failure{make_error_code(errc::io_error), "the summary requests failed"});
    auto& [h, pr] = *both;
    out.history = std::move(h.text);
    out.history_usage = h.usage;
    out.prefix = std::move(pr.text);
    out.prefix_usage = pr.usage;
    co_return step<void>{};
}

asio::awaitable<compaction_run::step<void>> compaction_run::request_in_turn(
    std::optional<summary_prompt> hp, std::optional<summary_prompt> pp, summaries& out
)
{
    // Pi 1.6 (#5536): the history request first, the turn prefix after its response;
    // single-slot local servers answer 429 to parallel requests.
    if (hp)
    {
        auto h = co_await request(std::move(*hp), summary_kind::history);
        if (!h)
            co_return h.error();
        out.history = std::move(h->text);
        out.history_usage = h->usage;
    }
    if (pp)
    {
        auto pr = co_await request(std::move(*pp), summary_kind::turn_prefix);
        if (!pr)
            co_return pr.error();
        out.prefix = std::move(pr->text);
        out.prefix_usage = pr->usage;
    }
    co_return step<void>{};
}

void compaction_run::finish_portable(
    const compaction_preparation& prep,
    const std::optional<usage>& native_usage,
    const scrub_fn& scrub,
    summaries& out
)
{
    // A model may still echo a secret: the summary is scrubbed before it is validated.
    if (out.history)
        scrub(*out.history);
    if (out.prefix)
        scrub(*out.prefix);
    // Pi 1.6 (#11058): a split turn with nothing else to summarize builds on the previous summary.
    if (!out.history && out.prefix && prep.previous_summary)
        out.history = prep.previous_summary;
    if (out.native)
    {
        j_.evidence.method = "native";  // the portable note accompanies the opaque item
        out.history_usage =
            out.history_usage ? combine_usage(*out.history_usage, *native_usage) : native_usage;
    }
}

asio::awaitable<compaction_run::step<summary_output>> compaction_run::request(
    summary_prompt prompt, summary_kind kind
)
{
    // Cancelled between two sequential requests: the second one is never sent.
    if (!still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    const auto cap = prompt.max_output_tokens;
    ++j_.model_calls;
    auto [ec, out] = co_await cx_.config().summarizer->async_summarize(
        std::move(prompt), asio::as_tuple(asio::use_awaitable)
    );
    // Billed whether or not the reply commits (a `length` stop included).
    if (out.usage)
        j_.evidence.usage = combine_usage(j_.evidence.usage, *out.usage);
    if (agentctx::is_cancelled(ec))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (ec)
    {
        std::string why = "summary request failed: " + ec.message();
        if (!out.failure_detail.empty())
            why += " (" + out.failure_detail + ")";
        co_return failure{ec, std::move(why)};
    }
    diagnostics d;
    if (auto r = check_summary_output(out, cap, d, kind); !r)
        co_return failure{r.error(), d.message};
    co_return out;
}

asio::awaitable<summary_output> compaction_run::request_or_throw(
    summary_prompt prompt, summary_kind kind, std::optional<failure>& first
)
{
    co_await asio::this_coro::throw_if_cancelled(false);
    auto r = co_await request(std::move(prompt), kind);
    if (r)
        co_return std::move(*r);
    if (!first)
        first = r.error();  // the sibling's cancellation, which follows, is not the cause
    throw request_failed{};
}

compaction_run::step<compaction_run::revalidated> compaction_run::revalidate(
    const plan& p, std::string first_kept
)
{
    // Appends are fine; a branch switch or another compaction is not.
    diagnostics diag;
    auto now = load_planning_path(cx_.log(), diag);
    if (!now)
        return failure{now.error(), diag.message};
    std::optional<std::size_t> kept_index;
    for (std::size_t i = 0; i < now->entries.size(); ++i)
        if (now->entries[i]->id == first_kept)
            kept_index = i;
    if (!kept_index || previous_compaction_id(now->entries) != previous_compaction_id(p.path))
        return failure{
            make_error_code(errc::stale_plan),
            "the path changed during the compaction (planned at leaf " + p.leaf.value_or("-") + ", now " +
                cx_.log().leaf_id().value_or("-") + ")"};
    return revalidated{std::move(now->entries), *kept_index, std::move(first_kept)};
}

compaction_run::step<compaction_result> compaction_run::build(
    const plan& p, const revalidated& v, const summaries& sum, bool bounded
)
{
    const auto& model = cx_.config().model;
    const auto window = bounded ? model.context_window : 0;  // 0: no threshold check
    if (sum.custom)
    {
        compaction_result result = *sum.custom;
        result.first_kept_entry_id = v.first_kept;
        result.summary += render_running_jobs_block(p.prep.running_jobs);
        result.summary += render_pinned_block(p.prep.pinned);  // pins survive a hook's result too
        result.pinned = p.prep.pinned;
        if (result.tokens_before == 0)
            result.tokens_before = p.prep.tokens_before;
        result.tokens_after = tokens_after_compaction(v.path, v.kept_index, result.summary, cx_.counter());
        const auto threshold = cx_.budgets().window_allowance();
        if (window > 0 && result.tokens_after > threshold)
            return failure{
                make_error_code(compaction::errc::insufficient_reduction),
                "hook result would leave ~" + std::to_string(result.tokens_after) +
                    " tokens, over the threshold of " + std::to_string(threshold),
                true};
        return result;
    }
    compaction_preparation current = p.prep;
    if (sum.native_covers_window)
    {
        current.is_split_turn = false;  // the compaction block covers the turn prefix as well
        current.turn_prefix_messages.clear();
    }
    current.first_kept_index = v.kept_index;
    current.first_kept_entry_id = v.first_kept;
    diagnostics diag;
    auto r = assemble_compaction(
        v.path, current, sum.history, sum.prefix, window, cx_.config().settings, diag, cx_.counter()
    );
    if (!r)
        return failure{r.error(), diag.message};
    return std::move(*r);
}

namespace {

// The entry's details.agentctx: how the compaction came about and what it cost, its evidence,
// the carried entries, a native state, and the portable checkpoint fields.
compaction::result<void> add_agentctx_details(
    const run_context& cx,
    const compaction_job& j,
    const compaction_result& result,
    long long duration_ms,
    boost::json::object evidence,
    const std::optional<boost::json::object>& native,
    const std::vector<evidence_reference>& evidence_refs,
    const std::string& first_kept,
    boost::json::object& details,
    diagnostics& diag
)
{
    auto& ours =
        (details["agentctx"] = boost::json::object{
             {"reason", to_string(j.request.reason)},
             {"tokensAfter", result.tokens_after},
             {"durationMs", duration_ms},
             {"modelCalls", j.model_calls},
             {"summarizer", j.from_hook ? std::string("hook") : cx.config().summarizer->name()},
         });
    ours.get_object()["evidence"] = std::move(evidence);
    if (!result.pinned.empty())
        ours.get_object()["pinned"] = result.pinned;
    if (native)
        ours.get_object()["native"] = *native;
    if (!evidence_refs.empty())
    {
        boost::json::array refs;
        for (const auto& r : evidence_refs)
            refs.push_back(to_json(r));
        ours.get_object()["evidenceRefs"] = std::move(refs);
    }
    // Portable checkpoints: what it covers (sourceRevision), who wrote it, under which settings.
    return add_checkpoint_fields(
        cx.log(), cx.config(), cx.ledger().revisions(), ours.get_object(), first_kept, j.from_hook, diag
    );
}

}  // namespace

compaction_run::step<commit_plan> compaction_run::make_entry(
    const compaction_job& j, const compaction_result& result, const revalidated& v, const summaries& sum
) const
{
    // Build everything first, then store append, log append, snapshot swap.
    boost::json::value details = result.details;
    if (details.is_null())
        details = boost::json::object{};
    if (details.is_object())
    {
        const long long duration_ms = elapsed_ms(j.started);
        diagnostics cdiag;
        if (auto r = add_agentctx_details(
                cx_,
                j,
                result,
                duration_ms,
                to_json(finished_evidence(j, std::nullopt)),
                sum.native,
                sum.evidence,
                v.first_kept,
                details.get_object(),
                cdiag
            );
            !r)
            return failure{r.error(), cdiag.message};
    }
    // Everything the entry writes is redacted, not only the model's text: the file lists in the
    // summary and in details, the carried entries and their block, a hook's details.
    std::string summary = result.summary;
    auto redactions = sum.redactions;
    redact_compaction(summary, details, cx_.redaction(), redactions);
    if (details.is_object() && !redactions.empty())
        details.get_object()["agentctx"].as_object()["redactions"] = redactions_json(redactions);
    if (details.is_object() && sum.recall_rules)
    {
        // The rules the next compaction checks again, though this span is gone by then.
        boost::json::array rules;
        for (const auto& r : *sum.recall_rules)
            rules.emplace_back(r);
        details.get_object()["agentctx"].as_object()["recall"] =
            boost::json::object{{"rules", std::move(rules)}};
    }
    // Pi 1.6: the summary calls' usage summed, and the replayed prompt and tool state at the
    // boundary, so Pi projects our compaction with its checkpoint first.
    const auto total_usage = compaction_usage(sum.history_usage, sum.prefix_usage);
    const std::string ts = iso_timestamp_now();
    // The snapshot holds the replay for this leaf (revalidated above): no second projection.
    auto checkpoint = system_checkpoint(cx_.current()->system, ts);
    auto e = std::make_shared<const entry>(make_compaction_entry(
        cx_.log().new_id(),
        cx_.log().leaf_id(),
        ts,
        summary,
        v.first_kept,
        static_cast<double>(result.tokens_before),
        details,
        j.from_hook,
        total_usage ? std::optional(usage_to_json(*total_usage)) : std::nullopt,
        std::move(checkpoint)
    ));
    std::vector<entry_ptr> next_path(v.path.begin(), v.path.end());
    next_path.push_back(e);
    auto next = snapshot_from_context(
        build_session_context(next_path, &cx_.log()), cx_.log().size() + 1, cx_.counter()
    );
    diagnostics diag;
    if (auto fits = check_line_fits(*e, cx_.log().options().max_line_bytes, diag); !fits)
        return failure{fits.error(), diag.message};
    return commit_plan{{std::move(e)}, std::nullopt, std::move(next)};
}

compaction_result compaction_run::stored_result(compaction_result r, const entry& stored) const
{
    // What callers and events see is what the entry stores: the redacted summary (its file lists
    // and pinned block included), never the text the model or a hook returned.
    r.summary = stored.summary;
    std::map<std::string, std::size_t> counts;
    redact_strings(r.details, cx_.redaction(), counts);
    boost::json::value pinned = std::move(r.pinned);
    redact_strings(pinned, cx_.redaction(), counts);
    r.pinned = std::move(pinned.as_array());
    return r;
}

asio::awaitable<compaction_run::step<std::optional<compaction_run::committed>>> compaction_run::commit(
    decide_fn decide
)
{
    // Decided, built and written in one write turn: a compare-and-set against the stored leaf in
    // the write's own transaction (a shared store). Not cancellable: once sent, only the store's
    // answer says whether it committed.
    std::optional<failure> refused;
    std::optional<committed> done;
    auto prepare = [&](diagnostics&) -> compaction::result<commit_plan> {
        auto in = decide();
        if (in && !*in)
            return commit_plan{};  // nothing to write
        auto plan = in ? make_entry(*(*in)->job, (*in)->result, (*in)->v, *(*in)->sum)
                       : step<commit_plan>(in.error());
        if (!plan)
        {
            refused = plan.error();
            return refused->ec;
        }
        done =
            committed{plan->entries.front(), stored_result(std::move((*in)->result), *plan->entries.front())};
        return std::move(*plan);
    };
    auto [ec, message] = co_await awaited<void(error_code, std::string)>(
        [&](auto h) { cx_.writes().async_commit(prepare, std::move(h)); },
        asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(asio::use_awaitable))
    );
    if (refused)
        co_return *refused;
    if (ec)
        co_return failure{ec, message};
    co_return std::move(done);
}

compaction_evidence compaction_run::finished_evidence(
    const compaction_job& j, std::optional<error_code> failed
)
{
    compaction_evidence e = j.evidence;
    e.elapsed_ms = elapsed_ms(j.started);
    e.calls = j.model_calls;
    if (failed)
        e.failure = failed->message();  // the code's name for agentctx codes; never a provider body
    return e;
}

bool compaction_run::still_wanted(asio::cancellation_type cancelled)
{
    return cancelled == asio::cancellation_type::none && !cx_.aborted(j_.id);
}

void compaction_run::emit_start()
{
    if (j_.start_emitted)
        return;
    j_.start_emitted = true;
    cx_.emit(compaction_start_event{j_.request.reason});
}

asio::awaitable<compaction_run::result_type> compaction_run::succeed(const compaction_job& j, committed c)
{
    const auto reason = j.request.reason;
    compaction_outcome out{
        .attempted = true,
        .compacted = true,
        .reason = reason,
        .will_retry = j.request.will_retry,
        .result = c.result,
        .entry_id = c.entry->id};
    if (j.request.adopted)
        record_adoption(j, out);
    cx_.ledger().suppression().reset();
    // The entry is durable: a cancellation while a hook runs reaches the hook, not the outcome.
    const compacted_event done{*c.entry, j.from_hook};  // named: it lives across the hooks' suspensions
    co_await cx_.hooks().run_compacted(done);
    cx_.emit(compaction_end_event{
        reason,
        c.result,
        false,
        j.request.will_retry,
        std::nullopt,
        std::nullopt,
        c.entry->usage,
        j.evidence.recall});
    cx_.emit(compaction_finished_event{reason, finished_evidence(j, std::nullopt)});
    cx_.logger().info(
        "compaction reason={} outcome=committed tokens_before={} tokens_after={} duration_ms={} "
        "model_calls={} "
        "entry={}",
        to_string(reason),
        c.result.tokens_before,
        c.result.tokens_after,
        elapsed_ms(j.started),
        j.model_calls,
        c.entry->id
    );
    co_return result_type{error_code{}, std::move(out)};
}

void compaction_run::record_adoption(const compaction_job& j, compaction_outcome& out)
{
    out.adopted = !j.from_hook;
    if (out.adopted)
        return;
    out.not_adopted = "hook_result";
    out.message = "a before_compact hook supplied the compaction's result: the entry holds the hook's "
                  "summary, and the provider's compaction item was not adopted";
}

asio::awaitable<compaction_run::result_type> compaction_run::fail(const compaction_job& j, failure f)
{
    const auto reason = j.request.reason;
    const bool aborted = agentctx::is_cancelled(f.ec) || f.ec == make_error_code(errc::hook_cancelled);
    const bool from_hook = j.from_hook || f.from_hook;
    compaction_outcome out{.attempted = true, .reason = reason, .message = f.message};
    // Pi 1.6 tries again once the session has a new entry, whatever failed: `--compat pi` keeps
    // that; agentctx pauses a deterministic failure until its prefix or settings change.
    auto kind = classify_failure(f.ec);
    if (cx_.config().compat == compaction::compat_mode::pi && kind == failure_kind::deterministic)
        kind = failure_kind::transient;
    cx_.ledger().suppression().failed(reason, kind, j.prefix, cx_.log().size());
    if (kind == failure_kind::deterministic && reason != compaction_reason::manual)
        out.message += j.prefix
                           ? "; automatic compaction of this history paused until it or the settings change"
                           : "; automatic compaction paused until new entries arrive";
    const auto shown = aborted ? std::nullopt : std::optional(out.message);
    // Pi 1.6: compaction_end first, then the failed hooks.
    cx_.emit(compaction_end_event{reason, std::nullopt, aborted, false, shown, j.evidence.discarded});
    // Named, not a temporary: it lives across the hooks' suspensions.
    const compact_failed_event failed{reason, shown, aborted, false, from_hook};
    co_await cx_.hooks().run_failed(failed);
    cx_.emit(compaction_finished_event{reason, finished_evidence(j, f.ec)});
    cx_.logger().info(
        "compaction reason={} outcome={} duration_ms={} model_calls={} detail=\"{}\"",
        to_string(reason),
        f.ec.message(),
        elapsed_ms(j.started),
        j.model_calls,
        out.message
    );
    co_return result_type{f.ec, std::move(out)};
}

}  // namespace agentctx::runtime::detail
