// advisor: one turn end at a time, the library's decisions in Pi's draft shapes.
#include "advisor.hpp"

#include "background_policy.hpp"

#include <agentctx/compaction/clearing_cost.hpp>
#include <agentctx/compaction/file_ops.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/summary.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/compaction/token_accounting.hpp>
#include <agentctx/compaction/tool_clearing.hpp>
#include <agentctx/compaction/working_budget.hpp>

#include <algorithm>

namespace agentctx::cli {

namespace {

namespace rd = runtime::detail;
using compaction::compat_mode;

boost::json::object error_answer(std::string_view code, std::string_view message)
{
    return {{"error", boost::json::object{{"code", code}, {"message", message}}}};
}

boost::json::array strings(const std::vector<std::string>& v)
{
    boost::json::array a;
    for (const auto& s : v)
        a.emplace_back(s);
    return a;
}

// 1-based position of the first message the kept part contributes: the first message of a
// projected entry at or after the cut's path index (the cut may fall on an entry that projects
// nothing, such as a context edit); the latest compaction, projected first, is not kept (0 = none).
std::size_t kept_position(const compaction::session_context& ctx, std::size_t first_kept_index)
{
    std::size_t before = 0;
    for (const auto& pe : ctx.entries)
    {
        const bool summary = pe.source && pe.source->type == compaction::entry_type::compaction;
        if (!summary && pe.path_index >= first_kept_index && !pe.messages.empty())
            return before + 1;
        before += pe.messages.size();
    }
    return 0;
}

// 1-based position of the first message of `entry_id` among `messages` (0 = none).
std::size_t position_of(const std::vector<compaction::context_message>& messages, const std::string& entry_id)
{
    for (std::size_t i = 0; i < messages.size(); ++i)
        if (messages[i].entry_id == entry_id)
            return i + 1;
    return 0;
}

// A clearing plan's edits as Pi's context_edit drafts (the replacements are moved out).
boost::json::array edit_drafts(compaction::clearing_plan& plan)
{
    boost::json::array edits;
    for (auto& e : plan.edits)
        edits.push_back(boost::json::object{
            {"type", "context_edit"}, {"targetId", e.target_id}, {"replacement", std::move(e.replacement)}});
    return edits;
}

}  // namespace

struct advisor::view
{
    compaction::session_context ctx;
    std::int64_t tokens = 0;
    std::int64_t threshold = 0;
};

advisor::advisor(std::string session_file, advisor_config config)
    : tail_(std::move(session_file)), config_(std::move(config))
{}

std::optional<boost::json::object> advisor::read(view& v)
{
    if (auto err = tail_.refresh())
        return error_answer(err->code, err->message);
    v.threshold =
        compaction::automatic_threshold(config_.context_window, config_.settings, compat_mode::agentctx);
    if (!tail_.log() || tail_.log()->size() == 0)
        return std::nullopt;
    compaction::diagnostics diag;
    auto ctx = compaction::build_session_context(*tail_.log(), diag);
    if (!ctx)
        return error_answer("session_invalid", tail_.path() + ": " + diag.message);
    v.ctx = std::move(*ctx);
    v.tokens = compaction::estimate_projected_context_tokens(v.ctx).tokens;
    return std::nullopt;
}

void advisor::add_status(boost::json::object& out, const view& v) const
{
    out["contextTokens"] = v.tokens;
    out["threshold"] = v.threshold;
    out["contextWindow"] = config_.context_window;
}

boost::json::object advisor::turn_end()
{
    view v;
    if (auto err = read(v))
        return std::move(*err);
    auto out = decide(v);
    add_status(out, v);
    return out;
}

std::optional<std::string> advisor::stale(const view&) const
{
    if (!plan_ || !tail_.log())
        return std::nullopt;
    const auto now = rd::path_steps(*tail_.log());
    const rd::prepared_binding b{plan_->planned_path, plan_->kept_index, {}};
    if (auto why = rd::check_binding(b, now, {}))
        return std::string(rd::to_string(*why));
    return std::nullopt;
}

boost::json::object advisor::decide(const view& v)
{
    boost::json::object discarded;
    if (auto why = stale(v))
    {
        discarded = {{"planId", plan_->id}, {"reason", *why}};
        plan_.reset();
    }
    const auto& s = config_.settings;
    const rd::check_state st{
        .background_enabled = rd::background_enabled(s, compat_mode::agentctx),
        .running = plan_ && !plan_->summary,
        .prepared = plan_ && plan_->summary.has_value(),
        .growth = std::nullopt};
    const bool enabled = s.enabled && config_.context_window > 0 && !v.ctx.messages.empty();
    const auto action =
        enabled ? rd::decide_check(v.tokens, v.threshold, s.background.start_at, st) : rd::check_action::none;
    boost::json::object out;
    if (action == rd::check_action::foreground && plan_ && plan_->summary)
        out = commit(v);
    else if (action == rd::check_action::foreground && plan_)
    {
        plan_->awaited = true;
        out = {{"action", "wait"}, {"planId", plan_->id}};
    }
    else if (action == rd::check_action::foreground)
        out = request_summary(v, true, "threshold", std::nullopt);
    else if (action == rd::check_action::start_background)
        out = request_summary(v, false, "background", std::nullopt);
    else if (!plan_ && enabled)
        out = clear(v);
    else
        out = {{"action", "none"}};
    if (!discarded.empty())
        out["discarded"] = std::move(discarded);
    return out;
}

// The clearing policy's edits; with the model's cache prices known, only once the clearing pays
// for the cache break it causes (price_clearing), else `none` with what was weighed (`deferred`).
boost::json::object advisor::clear(const view& v)
{
    const auto& s = config_.settings.clear_tool_results;
    if (!compaction::clearing_enabled(s, compat_mode::agentctx))
        return {{"action", "none"}};
    compaction::clearing_input in;
    in.context = v.ctx.messages;
    in.context_tokens = v.tokens;
    in.threshold = v.threshold;
    auto plan = compaction::plan_tool_clearing(s, in);
    if (plan.edits.empty())
        return {{"action", "none"}};
    if (config_.cache_prices)
    {
        const auto cost = compaction::price_clearing(v.ctx.messages, plan, s.keep, *config_.cache_prices);
        if (!cost.pays())
            return {
                {"action", "none"},
                {"deferred",
                 boost::json::object{
                     {"tokensFreed", plan.tokens},
                     {"tailTokens", cost.tail_tokens},
                     {"readsPaid", cost.reads_paid},
                     {"rewrite", cost.rewrite}}}};
    }
    return {
        {"action", "clear"},
        {"edits", edit_drafts(plan)},
        {"results", plan.results},
        {"tokensFreed", plan.tokens}};
}

boost::json::object advisor::request_summary(
    const view& v, bool foreground, std::string reason, const std::optional<std::string>& focus
)
{
    auto settings = config_.settings;
    compaction::plan_options opts{
        .mode = compat_mode::agentctx,
        .context_window = config_.context_window,
        .model_max_tokens = config_.model_max_tokens};
    if (!foreground)
    {
        // As the runtime's background plan: what the context gains until the threshold is kept too.
        settings.keep_recent_tokens = rd::background_keep(settings.keep_recent_tokens, v.tokens, v.threshold);
        opts.reserve_summary_room = false;
        opts.whole_turn_tokens = config_.settings.keep_recent_tokens;
    }
    compaction::diagnostics diag;
    auto prep = compaction::prepare_compaction(*tail_.log(), v.ctx, settings, opts, diag);
    if (!prep)
        return {{"action", "none"}, {"note", prep.error().message() + ": " + diag.message}};
    // One cache-friendly request checkpoints everything before the kept message: a split turn's
    // prefix is summarized with the history.
    auto& p = *prep;
    p.messages_to_summarize.insert(
        p.messages_to_summarize.end(), p.turn_prefix_messages.begin(), p.turn_prefix_messages.end()
    );
    p.turn_prefix_messages.clear();
    p.is_split_turn = false;
    compaction::checkpoint_scope scope;
    scope.first = p.messages_to_summarize.empty()
                      ? 1
                      : position_of(v.ctx.messages, p.messages_to_summarize[0].entry_id);
    scope.kept = kept_position(v.ctx, p.first_kept_index);
    if (scope.first == 0 || scope.kept == 0 || scope.kept <= scope.first)
        return {
            {"action", "none"},
            {"note",
             "the cut is not inside the projected context (first " + std::to_string(scope.first) + ", kept " +
                 std::to_string(scope.kept) + ", firstKeptEntryId " + p.first_kept_entry_id +
                 ", summarize from " +
                 (p.messages_to_summarize.empty() ? std::string("-") : p.messages_to_summarize[0].entry_id) +
                 ")"}};
    scope.kept_quote = compaction::message_quote(*v.ctx.messages[scope.kept - 1].msg);
    auto head = std::make_shared<compaction::request_head>();
    head->chars = static_cast<std::size_t>(v.tokens) * 4;
    const auto prompt = compaction::cache_friendly_history_prompt(
        head, scope, p.previous_summary, focus, config_.context_window, config_.model_max_tokens
    );
    summary_plan plan;
    plan.id = "p" + std::to_string(next_plan_++);
    plan.foreground = foreground;
    plan.reason = std::move(reason);
    for (const auto i : tail_.log()->active_path())
        plan.planned_path.push_back(tail_.log()->meta(i).id);
    plan.kept_index = p.first_kept_index;
    boost::json::object out{
        {"action", "summarize"},
        {"planId", plan.id},
        {"foreground", foreground},
        {"reason", plan.reason},
        {"instructions", prompt.prompt},
        {"maxOutputTokens", prompt.max_output_tokens},
        {"firstKeptEntryId", p.first_kept_entry_id},
        {"scope", boost::json::object{{"first", scope.first}, {"kept", scope.kept}}}};
    plan.prep = std::move(p);
    plan_ = std::move(plan);
    return out;
}

boost::json::object advisor::commit(const view& v)
{
    auto plan = std::move(*plan_);
    plan_.reset();
    compaction::diagnostics diag;
    auto path = compaction::read_active_path(*tail_.log(), diag);
    if (!path)
        return error_answer("session_invalid", tail_.path() + ": " + diag.message);
    auto r = compaction::assemble_compaction(
        *path, plan.prep, plan.summary, std::nullopt, config_.context_window, config_.settings, diag
    );
    const auto verdict =
        r ? rd::judge_size(v.tokens, r->tokens_after, v.threshold, true) : rd::size_verdict::discard;
    if (verdict == rd::size_verdict::discard)
    {
        auto out = plan.foreground ? boost::json::object{{"action", "none"}}
                                   : request_summary(v, true, "threshold", std::nullopt);
        out["discarded"] = boost::json::object{
            {"planId", plan.id}, {"reason", r ? "over_threshold" : "failed"}, {"message", diag.message}};
        return out;
    }
    const auto lists = compaction::compute_file_lists(plan.prep.file_ops, plan.prep.file_bounds);
    boost::json::object draft{
        {"type", "compaction"},
        {"summary", r->summary},
        {"firstKeptEntryId", r->first_kept_entry_id},
        {"tokensBefore", v.tokens},
        {"details",
         boost::json::object{
             {"readFiles", strings(lists.read_files)},
             {"modifiedFiles", strings(lists.modified_files)},
             {"agentctx",
              boost::json::object{
                  {"reason", plan.reason},
                  {"planId", plan.id},
                  {"coveredEntries", plan.kept_index},
                  {"tokensAfter", r->tokens_after}}}}}};
    if (!plan.usage.is_null())
        draft["usage"] = plan.usage;
    ++compactions_;
    last_compaction_ = plan.reason;
    boost::json::object out{
        {"action", "commit"}, {"compaction", std::move(draft)}, {"tokensAfter", r->tokens_after}};
    if (!plan.from_hook)
        clear_kept(v, kept_position(v.ctx, plan.kept_index), r->tokens_after, out);
    return out;
}

// The request after a compaction writes the whole context anew, so a clearing of the kept part
// proposed with it breaks no cached prefix: its edits join the commit (`edits`, after the draft).
// As every decision of a turn end, the trigger is compared with the context of that turn end.
void advisor::clear_kept(const view& v, std::size_t kept, std::int64_t tokens_after, boost::json::object& out)
{
    const auto& s = config_.settings.clear_tool_results;
    if (kept == 0 || !compaction::clearing_enabled(s, compat_mode::agentctx))
        return;
    compaction::clearing_input in;
    in.context = std::span(v.ctx.messages).subspan(kept - 1);
    in.context_tokens = v.tokens;
    in.threshold = v.threshold;
    auto plan = compaction::plan_tool_clearing(s, in);
    if (plan.edits.empty())
        return;
    out["edits"] = edit_drafts(plan);
    out["results"] = plan.results;
    out["tokensFreed"] = plan.tokens;
    out["tokensAfter"] = tokens_after - plan.tokens;
}

boost::json::object advisor::summary(
    const std::string& plan_id, const std::string& text, boost::json::value usage
)
{
    if (!plan_ || plan_->id != plan_id)
        return error_answer(
            "unknown_plan", "no summary was requested as '" + plan_id + "' (or it was dropped)"
        );
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    {
        plan_.reset();
        return error_answer(
            "summary_empty", "the summary of '" + plan_id + "' is empty; the plan is dropped"
        );
    }
    plan_->summary = text;
    plan_->usage = std::move(usage);
    view v;
    if (auto err = read(v))
        return std::move(*err);
    boost::json::object out;
    if (auto why = stale(v))
    {
        out = {{"action", "none"}, {"discarded", boost::json::object{{"planId", plan_id}, {"reason", *why}}}};
        plan_.reset();
    }
    else if (plan_->foreground || plan_->awaited)
        out = commit(v);
    else
        out = {{"action", "none"}, {"prepared", plan_id}};
    add_status(out, v);
    return out;
}

boost::json::object advisor::failed(const std::string& plan_id)
{
    if (!plan_ || plan_->id != plan_id)
        return error_answer(
            "unknown_plan", "no summary was requested as '" + plan_id + "' (or it was dropped)"
        );
    plan_.reset();
    return {{"action", "none"}, {"dropped", plan_id}};
}

boost::json::object advisor::compact(const std::string& reason, const std::optional<std::string>& focus)
{
    view v;
    if (auto err = read(v))
        return std::move(*err);
    boost::json::object out;
    if (auto why = stale(v))
        plan_.reset();
    if (v.ctx.messages.empty())
        out = {{"action", "none"}, {"note", "the session holds no context yet"}};
    else if (plan_ && plan_->summary && reason != "manual")
    {
        plan_->from_hook = true;
        out = commit(v);
    }
    else
        out = request_summary(v, true, reason, focus);
    if (plan_ && out["action"] == "summarize")
        plan_->from_hook = true;
    add_status(out, v);
    return out;
}

boost::json::object advisor::status()
{
    view v;
    if (auto err = read(v))
        return std::move(*err);
    boost::json::object out{{"action", "none"}, {"compactions", compactions_}};
    out["lastCompaction"] =
        last_compaction_ ? boost::json::value(*last_compaction_) : boost::json::value(nullptr);
    out["pending"] = plan_ ? boost::json::value(plan_->id) : boost::json::value(nullptr);
    out["entries"] = tail_.log() ? tail_.log()->size() : 0;
    out["reads"] = boost::json::object{
        {"wholeLoads", tail_.loads()}, {"appendedLines", tail_.appended_lines()}, {"offset", tail_.offset()}};
    add_status(out, v);
    return out;
}

}  // namespace agentctx::cli
