// `agentctx plan SESSION.jsonl`: a dry run of the compaction planner (what would be cut and why).
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/serialize.hpp>

#include <cstdio>

namespace agentctx::cli {

namespace {

const char* const plan_usage =
    "usage: agentctx plan SESSION.jsonl [--keep-recent N] [--reserve N] [--context-window N]\n"
    "                     [--compat pi] [--model PROVIDER/ID] [--settings FILE]\n"
    "                     [--project-dir DIR [--trust-project]] [--json]\n"
    "\n"
    "Dry run of the compaction planner: the context's estimated tokens against the threshold\n"
    "(context window - reserve), and the cut a compaction would make now: what is summarized,\n"
    "what becomes the split-turn prefix, what is kept, the file lists and the summarizer input.\n"
    "\n"
    "  --keep-recent N      tokens of recent work kept verbatim (default 20000)\n"
    "  --reserve N          tokens reserved for the reply (default 16384)\n"
    "  --context-window N   the model's window (default: the provider's, else 200000)\n"
    "  --compat pi          Pi 1.6.0's exact decisions, quirks included\n"
    "  --model PROVIDER/ID  the active model: its compaction.modelOverrides entry applies (default:\n"
    "                       the settings' or the environment's provider and model, as for compact)\n"
    "  --settings FILE      the settings JSON ({\"compaction\": {...}}); default: "
    "$PI_CODING_AGENT_DIR/settings.json\n"
    "                       or ~/.pi/agent/settings.json\n"
    "  --project-dir DIR    with --trust-project, DIR/.pi/settings.json is merged on top (untrusted: "
    "ignored)\n"
    "  --json               one JSON object: leafId, context, threshold, shouldCompact, plan, error\n";

std::string serialized(const std::vector<compaction::context_message>& msgs)
{
    std::vector<std::shared_ptr<const compaction::message>> v;
    for (const auto& m : msgs)
        v.push_back(m.msg);
    // As the summary prompt serializes it (Pi 1.6's text for summaries).
    return compaction::serialize_conversation(compaction::convert_to_llm(v, compaction::summary_framing::pi));
}

boost::json::array ids(const std::vector<compaction::context_message>& msgs)
{
    boost::json::array a;
    for (const auto& m : msgs)
        a.emplace_back(m.entry_id);
    return a;
}

boost::json::array strings(const std::vector<std::string>& v)
{
    boost::json::array a;
    for (const auto& s : v)
        a.emplace_back(s);
    return a;
}

// The `--json` answer: the context, the threshold and the plan (or why there is none).
boost::json::object plan_json(
    const compaction::session_context& ctx,
    std::int64_t estimated,
    std::int64_t threshold,
    bool should,
    const compaction::result<compaction::compaction_preparation>& prep,
    const compaction::diagnostics& plan_diag
)
{
    boost::json::object out;
    out["leafId"] = ctx.leaf_id ? boost::json::value(*ctx.leaf_id) : boost::json::value(nullptr);
    out["context"] =
        boost::json::object{{"messages", messages_json(ctx.messages)}, {"estimatedTokens", estimated}};
    out["threshold"] = threshold;
    out["shouldCompact"] = should;
    if (!prep)
    {
        out["plan"] = nullptr;
        out["error"] = boost::json::object{{"code", prep.error().message()}, {"message", plan_diag.message}};
        return out;
    }
    const auto lists = compaction::compute_file_lists(prep->file_ops, prep->file_bounds);
    out["plan"] = boost::json::object{
        {"firstKeptEntryId", prep->first_kept_entry_id},
        {"isSplitTurn", prep->is_split_turn},
        {"tokensBefore", prep->tokens_before},
        {"messagesToSummarize", ids(prep->messages_to_summarize)},
        {"turnPrefixMessages", ids(prep->turn_prefix_messages)},
        {"readFiles", strings(lists.read_files)},
        {"modifiedFiles", strings(lists.modified_files)},
        {"serializedHistory", serialized(prep->messages_to_summarize)},
        {"serializedTurnPrefix", serialized(prep->turn_prefix_messages)},
    };
    out["error"] = nullptr;
    return out;
}

// The text answer's cut: where, what is summarized, what is kept.
void print_cut(const compaction::session_context& ctx, const compaction::compaction_preparation& prep)
{
    std::size_t kept = 0;
    bool in_kept = false;
    for (const auto& m : ctx.messages)
    {
        in_kept = in_kept || m.entry_id == prep.first_kept_entry_id;
        kept += in_kept;
    }
    const auto lists = compaction::compute_file_lists(prep.file_ops, prep.file_bounds);
    std::printf(
        "cut at    %s%s\n",
        prep.first_kept_entry_id.c_str(),
        prep.is_split_turn ? "  (split turn: the turn's start is summarized separately)" : ""
    );
    std::printf(
        "summarize %zu messages%s\n",
        prep.messages_to_summarize.size(),
        prep.previous_summary ? " into the previous summary" : ""
    );
    if (prep.is_split_turn)
        std::printf("prefix    %zu messages of the split turn\n", prep.turn_prefix_messages.size());
    std::printf("keep      %zu messages, from %s on\n", kept, prep.first_kept_entry_id.c_str());
    std::printf("files     %zu read, %zu modified\n", lists.read_files.size(), lists.modified_files.size());
    std::printf("tokens before %lld\n", static_cast<long long>(prep.tokens_before));
}

// The text answer's context and threshold lines.
void print_budget(
    const compaction::context_estimate& est,
    std::int64_t window,
    std::int64_t threshold,
    bool should,
    const compaction::compaction_settings& settings,
    bool pi
)
{
    const double frac = static_cast<double>(est.tokens) / static_cast<double>(window);
    std::printf(
        "context  %s %lld / %lld tokens (%.1f%%)%s\n",
        bar(frac).c_str(),
        static_cast<long long>(est.tokens),
        static_cast<long long>(window),
        frac * 100,
        est.last_usage_index ? "  (provider usage + estimates)" : "  (estimated, chars/4)"
    );
    std::printf(
        "threshold %lld (window - reserve %lld): %s\n",
        static_cast<long long>(threshold),
        static_cast<long long>(settings.reserve_tokens),
        should ? "over - a compaction would trigger" : "under - no automatic compaction"
    );
    std::printf(
        "mode      %s, keep recent %lld tokens\n\n",
        pi ? "compat pi" : "agentctx",
        static_cast<long long>(settings.keep_recent_tokens)
    );
}

}  // namespace

int cmd_plan(int argc, char** argv)
{
    int code = exit_ok;
    auto a = command_args(
        argc,
        argv,
        "plan",
        plan_usage,
        {"keep-recent", "reserve", "context-window", "compat", "settings", "project-dir", "model"},
        {"json", "trust-project"},
        code
    );
    if (!a)
        return code;
    const bool json = a->has("json");
    const auto compat = a->get("compat");
    if (compat && *compat != "pi")
    {
        std::fprintf(stderr, "agentctx plan: --compat takes only 'pi'\n");
        return exit_usage;
    }
    const compaction::compat_mode mode =
        compat ? compaction::compat_mode::pi : compaction::compat_mode::agentctx;

    const auto host = cli_host_config(*a, json, code, true);
    if (!host)
        return code;
    const auto& loaded = host->settings;
    const compaction::compaction_settings& settings = loaded.compaction;
    const auto window = host->model.context_window;
    auto s = open_session_context(a->positional[0], json, code);
    if (!s)
        return code;
    const auto& ctx = s->context;
    // Pi 1.6: usage older than the latest context edit or compaction is not trusted.
    const auto est = compaction::estimate_projected_context_tokens(ctx);
    const std::int64_t threshold = window - settings.reserve_tokens;
    const bool should = compaction::should_compact(est.tokens, window, settings);

    compaction::diagnostics plan_diag;
    auto prep = compaction::prepare_compaction(
        s->log,
        ctx,
        settings,
        {.mode = mode,
         .pins = &loaded.pins,
         .required = &loaded.required,
         .jobs = &loaded.jobs,
         .context_window = window},
        plan_diag
    );

    if (json)
    {
        print_json(plan_json(ctx, est.tokens, threshold, should, prep, plan_diag));
        exit_read_command(exit_ok);
    }
    print_budget(est, window, threshold, should, settings, mode == compaction::compat_mode::pi);
    if (!prep)
        std::printf("no plan: %s: %s\n", prep.error().message().c_str(), plan_diag.message.c_str());
    else
        print_cut(ctx, *prep);
    exit_read_command(exit_ok);
}

}  // namespace agentctx::cli
