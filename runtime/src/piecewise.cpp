// Piecewise portable summaries: choose single or pieces (resuming compatible progress),
// summarize the pieces in order with the running note, and persist each accepted piece.
#include "compaction_run.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/error_category.hpp>
#include <agentctx/compaction/pinned.hpp>
#include <agentctx/compaction/piece_plan.hpp>
#include <agentctx/compaction/progress_record.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace compaction;

namespace {

// The newest progress entry after the latest compaction on the path, if any.
const entry* latest_progress(const std::vector<entry_ptr>& path)
{
    for (std::size_t i = path.size(); i-- > 0;)
    {
        const entry& e = *path[i];
        if (e.type == entry_type::compaction)
            return nullptr;
        if (e.type == entry_type::custom && e.custom_type == progress_custom_type)
            return &e;
    }
    return nullptr;
}

// Hands the host a handler it may complete once. A host that throws completes it (posted, never
// inline) with checkpoint_persist_failed, so the run never waits on a handler nobody holds.
template <class Handler>
void call_host(const session_config& config, const progress_record& r, progress_position pos, Handler handler)
{
    const auto slot = asio::get_associated_cancellation_slot(handler);
    const auto ex = asio::get_associated_executor(handler);
    auto held = std::make_shared<std::optional<Handler>>(std::move(handler));
    const auto once = [held](error_code ec, bool ok) {
        if (!*held)
            return;
        Handler h = std::move(**held);
        held->reset();
        std::move(h)(ec, ok);
    };
    try
    {
        config.persist_checkpoint(
            r,
            pos,
            asio::any_completion_handler<persist_checkpoint_signature>(
                asio::bind_cancellation_slot(slot, asio::bind_executor(ex, once))
            )
        );
    }
    catch (const std::exception& e)
    {
        spdlog::warn("persist_checkpoint threw: {}", e.what());
        asio::post(ex, [once] { once(make_error_code(errc::checkpoint_persist_failed), false); });
    }
}

// A host error that already is one of ours keeps its code; anything else is the persist failure.
bool is_agentctx_error(const error_code& ec)
{
    return ec.category() == runtime::error_category() || ec.category() == compaction::error_category();
}

// The output room a summary request leaves: the model's output cap (at most 32k), never less
// than Pi's 4096-token margin.
std::int64_t output_headroom(std::int64_t model_max_tokens)
{
    const std::int64_t m = model_max_tokens > 0 ? model_max_tokens : default_summary_max_output_tokens;
    return std::max<std::int64_t>(4096, std::min<std::int64_t>(m, 32768));
}

}  // namespace

std::vector<std::shared_ptr<const message>> messages_of(std::span<const context_message> v)
{
    std::vector<std::shared_ptr<const message>> out;
    out.reserve(v.size());
    for (const auto& m : v)
        out.push_back(m.msg);
    return out;
}

std::optional<std::string> previous_compaction_id(const std::vector<entry_ptr>& path)
{
    for (std::size_t i = path.size(); i-- > 0;)
        if (path[i]->type == entry_type::compaction)
            return path[i]->id;
    return std::nullopt;
}

asio::awaitable<compaction_run::step<compaction_run::portable_bound>> compaction_run::preflight(const plan& p)
{
    const auto& prefix = p.prep.messages_to_summarize;
    const auto& settings = cx_.config().settings;
    const auto& model = cx_.config().model;
    portable_bound bound{
        portable_source_limit(settings.summary_max_source_chars, model.context_window), std::nullopt};
    auto& ev = j_.evidence.preflight.emplace();
    if (!cx_.config().summarizer->capabilities().exact_counting)
        co_return bound;
    const std::size_t chars = source_chars(prefix);
    if (model.context_window <= 0)
    {
        ev.note = "the model's window is unknown";
        co_return bound;
    }
    // Far over the window, the verdict is certain and the count would carry the whole prefix.
    if (static_cast<std::int64_t>(chars / 4) > 4 * model.context_window)
    {
        ev.note = "~" + std::to_string(chars / 4) + " tokens is over 4x the window; not counted";
        co_return bound;
    }
    auto prompt = history_summary_prompt(
        messages_of(prefix),
        p.prep.previous_summary,
        j_.request.instructions,
        model.context_window,
        model.max_output_tokens
    );
    prompt.prompt += pinned_prompt_note(p.prep.pinned);
    prompt.prompt = cx_.redaction().redact(prompt.prompt).text;  // what the request itself would send
    const std::size_t overhead_chars =
        prompt.prompt.size() + prompt.system_prompt.size() - std::min(chars, prompt.prompt.size());
    ++j_.evidence.counting_calls;
    auto [ec, tokens] = co_await cx_.config().summarizer->async_count_tokens(
        std::move(prompt), asio::as_tuple(asio::use_awaitable)
    );
    if (agentctx::is_cancelled(ec) ||
        !still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
        co_return failure{make_error_code(errc::cancelled), "cancelled"};
    if (ec || tokens <= 0)
    {
        ev.note =
            "the count failed (" + (ec ? ec.message() : std::string("no tokens")) + "); the estimate decides";
        cx_.logger().warn("compaction preflight: {}", ev.note);
        co_return bound;
    }
    ev.method = "count";
    ev.input_tokens = tokens;
    const std::int64_t headroom = output_headroom(model.max_output_tokens);
    const bool fits = tokens + headroom <= model.context_window;
    ev.fits = fits;
    bound.fits = fits;
    const auto explicit_limit =
        static_cast<std::size_t>(std::max<std::int64_t>(settings.summary_max_source_chars, 0));
    if (fits)
    {
        bound.limit = explicit_limit;  // the count replaces the conservative share; the setting still bounds
        co_return bound;
    }
    // Pieces measured with the count's bytes per token: each request carries its piece, the
    // running note (up to one output) and the prompt, and leaves room for the output.
    const double bytes_per_token = static_cast<double>(chars + overhead_chars) / static_cast<double>(tokens);
    const double piece_tokens = static_cast<double>(model.context_window - 2 * headroom) -
                                static_cast<double>(overhead_chars) / bytes_per_token;
    if (piece_tokens > 0)
    {
        const auto measured = static_cast<std::size_t>(0.9 * piece_tokens * bytes_per_token);
        bound.limit = explicit_limit > 0 ? std::min(explicit_limit, measured) : measured;
    }
    co_return bound;
}

void compaction_run::fold_oversized_turn_prefix(plan& p)
{
    auto& prep = p.prep;
    if (!prep.is_split_turn || prep.turn_prefix_messages.empty())
        return;
    const std::size_t limit = portable_source_limit(
        cx_.config().settings.summary_max_source_chars, cx_.config().model.context_window
    );
    if (limit == 0)
        return;
    const std::size_t chars = source_chars(prep.turn_prefix_messages);
    if (chars <= limit)
        return;
    prep.messages_to_summarize.insert(
        prep.messages_to_summarize.end(), prep.turn_prefix_messages.begin(), prep.turn_prefix_messages.end()
    );
    prep.turn_prefix_messages.clear();
    prep.is_split_turn = false;
    j_.evidence.turn_prefix_folded = true;
    cx_.logger().info(
        "compaction: the split turn's prefix ({} bytes) is over the portable bound ({}); it is "
        "summarized with the history",
        chars,
        limit
    );
}

compaction_run::step<std::optional<compaction_run::piece_run>> compaction_run::choose_pieces(
    const plan& p, const portable_bound& bound
)
{
    const auto& prefix = p.prep.messages_to_summarize;
    if (prefix.empty())
        return std::optional<piece_run>{};
    const std::size_t limit = bound.limit;
    const auto base = previous_compaction_id(p.path);

    // The newest progress in the file; else the copy the host kept (persist_checkpoint) and
    // handed back after a restart.
    progress_reason why{};
    diagnostics diag;
    std::optional<compaction::result<progress_record>> found;
    std::string from;
    if (const entry* e = latest_progress(p.path))
    {
        const auto* data = e->raw.if_contains("data");
        found.emplace(parse_progress(data ? *data : boost::json::value(nullptr), why, diag));
        from = "progress entry " + e->id;
    }
    else if (cx_.config().saved_progress)
    {
        found.emplace(*cx_.config().saved_progress);
        from = "the host's saved progress";
    }
    if (found)
    {
        auto& r = *found;
        if (r)
        {
            const progress_context now{
                prefix, base, checkpoint_identity_of(cx_.config()), config_digest_of(cx_.config())};
            if (auto ok = check_progress(*r, now, why, diag); !ok)
                r = ok.error();
        }
        if (r)
        {
            piece_run run{remaining_pieces(*r, prefix, limit), r->note};
            const std::size_t done = r->completed;
            j_.evidence.method = "piecewise";
            j_.evidence.pieces_resumed = done;
            j_.evidence.pieces_completed = done;
            j_.evidence.pieces_total = done + run.pieces.size();
            cx_.logger().info(
                "compaction resumes {}: {} of {} pieces done", from, done, j_.evidence.pieces_total
            );
            return std::optional<piece_run>(std::move(run));
        }
        j_.evidence.progress_rejected = std::string(to_string(why));
        cx_.logger().warn("compaction {} rejected ({}): {}", from, to_string(why), diag.message);
    }

    if (limit == 0 || source_chars(prefix) <= limit)
        return std::optional<piece_run>{};
    auto pieces = plan_pieces(prefix, limit);
    if (pieces.size() < 2)
        return std::optional<piece_run>{};
    j_.evidence.method = "piecewise";
    j_.evidence.pieces_total = pieces.size();
    return std::optional<piece_run>(piece_run{std::move(pieces), p.prep.previous_summary});
}

asio::awaitable<compaction_run::step<summary_output>> compaction_run::summarize_pieces(
    const plan& p, piece_run run, const scrub_fn& scrub
)
{
    const auto& model = cx_.config().model;
    const std::span<const context_message> prefix = p.prep.messages_to_summarize;
    const auto max_calls = cx_.config().settings.summary_max_calls;
    std::optional<std::string> effort;
    if (const auto snap = cx_.current(); snap->thinking_level != "off")
        effort = snap->thinking_level;
    std::optional<usage> total;
    covered_hasher covered;
    if (!run.pieces.empty())
        covered.add(prefix.first(run.pieces.front().begin));
    for (std::size_t k = 0; k < run.pieces.size(); ++k)
    {
        const auto& piece = run.pieces[k];
        if (max_calls > 0 && j_.model_calls >= max_calls)
            co_return failure{
                make_error_code(errc::summary_call_limit),
                "summaryMaxCalls (" + std::to_string(max_calls) + ") reached with " +
                    std::to_string(run.pieces.size() - k) +
                    " pieces left; completed pieces are kept and the next pass continues"};
        auto prompt = history_summary_prompt(
            messages_of(prefix.subspan(piece.begin, piece.end - piece.begin)),
            run.note,
            j_.request.instructions,
            model.context_window,
            model.max_output_tokens
        );
        prompt.reasoning_effort = effort;
        prompt.prompt += pinned_prompt_note(p.prep.pinned);
        scrub(prompt.prompt);
        auto out = co_await request(std::move(prompt), summary_kind::history);
        if (!out)
            co_return out.error();
        scrub(out->text);
        total = total ? combine_usage(*total, out->usage.value_or(usage{})) : out->usage;
        if (k + 1 == run.pieces.size())
        {
            // The last note covers the whole prefix: it is validated and committed as a single summary is.
            ++j_.evidence.pieces_completed;
            out->usage = total;
            co_return std::move(*out);
        }
        progress_record r;
        r.base = previous_compaction_id(p.path);
        r.note = out->text;
        covered.add(prefix.subspan(piece.begin, piece.end - piece.begin));
        r.covered = covered.value();
        r.covered_last_entry_id = prefix[piece.end - 1].entry_id;
        for (std::size_t m = k + 1; m < run.pieces.size(); ++m)
            r.remaining.push_back(run.pieces[m].end);
        r.prefix_messages = prefix.size();
        r.completed = j_.evidence.pieces_completed + 1;
        r.identity = checkpoint_identity_of(cx_.config());
        r.config_digest = config_digest_of(cx_.config());
        const progress_position pos{j_.evidence.pieces_completed + 1, run.pieces.size() - k - 1};
        auto saved = co_await persist_piece(r, pos);
        if (!saved)
            co_return saved.error();
        run.note = std::move(r.note);
        j_.evidence.pieces_completed = pos.completed;
        cx_.emit(compaction_progress_event{pos.completed, pos.remaining});
    }
    co_return failure{make_error_code(errc::io_error), "no pieces to summarize"};  // unreachable: >= 1 piece
}

asio::awaitable<compaction_run::step<bool>> compaction_run::persist_piece(
    const progress_record& r, progress_position pos
)
{
    const auto refused = [](std::string why) {
        return failure{make_error_code(errc::checkpoint_persist_failed), "persist_checkpoint " + why};
    };
    if (cx_.config().persist_checkpoint)
    {
        auto [ec, accepted] = co_await asio::
            async_initiate<const asio::as_tuple_t<asio::use_awaitable_t<>>, persist_checkpoint_signature>(
                [&](auto handler) { call_host(cx_.config(), r, pos, std::move(handler)); },
                asio::as_tuple(asio::use_awaitable)
            );
        // Cancelled while the host saved: the staged piece is not accepted (no entry, no event).
        if (agentctx::is_cancelled(ec) ||
            !still_wanted((co_await asio::this_coro::cancellation_state).cancelled()))
            co_return failure{make_error_code(errc::cancelled), "cancelled"};
        if (ec && is_agentctx_error(ec))
            co_return failure{ec, "persist_checkpoint failed: " + ec.message()};
        if (ec)
            co_return refused("failed: " + ec.message());
        if (!accepted)
            co_return refused("refused the piece");
    }
    if (cx_.config().progress_in_session)
    {
        boost::json::object fields{
            {"type", "custom"}, {"customType", progress_custom_type}, {"data", to_json(r)}};
        auto [ec, id] =
            co_await asio::async_initiate<const asio::as_tuple_t<asio::use_awaitable_t<>>, append_signature>(
                [this, &fields](auto handler) { cx_.append(std::move(fields), std::move(handler)); },
                asio::as_tuple(asio::use_awaitable)
            );
        if (ec)
            co_return failure{ec, "could not append the progress entry: " + ec.message()};
    }
    co_return true;
}

}  // namespace agentctx::runtime::detail
