// The recall gate: a validated summary checked against the probes of its span; one follow-up in the
// same conversation, then the user rules still missing carried verbatim.
#include "compaction_run.hpp"

#include <agentctx/compaction/cancelled.hpp>
#include <agentctx/compaction/file_ops.hpp>
#include <agentctx/compaction/recall.hpp>
#include <agentctx/compaction/recall_carry.hpp>

#include <spdlog/spdlog.h>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using namespace compaction;

namespace {

recall_gate_mode gate_mode(const session_config& c)
{
    if (c.compat == compat_mode::pi)
        return recall_gate_mode::off;  // Pi 1.6 has no gate
    return c.settings.recall_gate.value_or(recall_gate_mode::repair);
}

// The rules the latest compaction on the path carries forward (its details, its verbatim part).
std::vector<std::string> rules_of_previous(const std::vector<entry_ptr>& path)
{
    for (auto it = path.rbegin(); it != path.rend(); ++it)
        if ((*it)->type == entry_type::compaction)
            return carried_rules((*it)->details, (*it)->summary);
    return {};
}

// What the checkpoint will say: the summaries and the file lists the entry appends.
std::string checkpoint_text(
    const compaction_preparation& prep, const std::string& history, const std::optional<std::string>& prefix
)
{
    std::string text = history;
    if (prefix)
        text += "\n" + *prefix;
    text += format_file_operations(
        compute_file_lists(prep.file_ops, prep.file_bounds), prep.file_bounds.value_or(file_list_bounds{})
    );
    return text;
}

bool any_rule(const std::vector<recall_probe>& probes)
{
    return std::any_of(probes.begin(), probes.end(), [](const recall_probe& p) {
        return p.kind == probe_kind::rule;
    });
}

}  // namespace

asio::awaitable<compaction_run::step<void>> compaction_run::recall_gate(const plan& p, summaries& sum)
{
    const auto mode = gate_mode(cx_.config());
    // A hook's result and a native compaction are not the model's portable summary: not gated.
    // The gate works on the history summary, or on a split turn's prefix when only it was asked.
    const bool on_prefix = !sum.history_request && sum.prefix_request && sum.prefix;
    auto& target = on_prefix ? sum.prefix : sum.history;
    if (mode == recall_gate_mode::off || sum.custom || sum.native || !target)
        co_return step<void>{};
    // Probes are scrubbed like the summary; not counted again: the same text was counted when the
    // summary request was scrubbed.
    const scrub_fn scrub = [this](std::string& text) { text = cx_.redaction().redact(text).text; };
    std::vector<context_message> span = p.prep.messages_to_summarize;
    span.insert(span.end(), p.prep.turn_prefix_messages.begin(), p.prep.turn_prefix_messages.end());
    const probe_limits limits;
    const auto probes = extract_probes(span, rules_of_previous(p.path), limits, scrub);
    const auto text_with = [&](const std::string& replaced) {
        return on_prefix ? checkpoint_text(p.prep, sum.history.value_or(""), replaced)
                         : checkpoint_text(p.prep, replaced, sum.prefix);
    };
    recall_counts counts{.probes = probes.size()};
    auto missing = missing_probes(probes, text_with(*target), limits.min_coverage);
    counts.found = probes.size() - missing.size();

    // repair: one follow-up, when a rule is missing and the summarizer would answer differently.
    const auto& asked = on_prefix ? sum.prefix_request : sum.history_request;
    if (mode == recall_gate_mode::repair && any_rule(missing) && asked &&
        !cx_.config().summarizer->capabilities().extractive)
    {
        auto follow = recall_followup_prompt(*asked, *target, missing);
        if (!follow.head)
        {
            const auto& model = cx_.config().model;
            follow.max_output_tokens =
                summary_output_budget(follow, model.context_window, model.max_output_tokens);
        }
        auto reply = co_await request(
            std::move(follow), on_prefix ? summary_kind::turn_prefix : summary_kind::history
        );
        if (!reply && agentctx::is_cancelled(reply.error().ec))
            co_return reply.error();
        if (!reply)
            cx_.logger().info("recall follow-up refused ({}): the draft stands", reply.error().ec.message());
        else
        {
            for (const auto& [rule, n] : cx_.redaction().redact(reply->text).counts)
                sum.redactions[rule] += n;  // a secret the model echoes is counted, as in a summary
            scrub(reply->text);
            const auto text = text_with(reply->text);
            auto still = missing_probes(missing, text, limits.min_coverage);
            // Taken only when it keeps everything the draft kept as well.
            if (missing_probes(probes, text, limits.min_coverage).size() == still.size())
            {
                counts.repaired = missing.size() - still.size();
                target = std::move(reply->text);
                auto& u = on_prefix ? sum.prefix_usage : sum.history_usage;
                if (u && reply->usage)
                    u = combine_usage(*u, *reply->usage);
                else if (reply->usage)
                    u = reply->usage;
                missing = std::move(still);
            }
        }
    }
    if (mode == recall_gate_mode::repair)
    {
        // A model that copied the previous verbatim part would carry a rule the span revoked.
        for (auto* part : {&sum.history, &sum.prefix})
            if (*part)
                drop_revoked_rules(**part, probes);
        counts.verbatim = add_verbatim_rules(*target, missing, limits);
    }
    finish_recall(probes, counts, sum);
    co_return step<void>{};
}

void compaction_run::finish_recall(
    const std::vector<recall_probe>& probes, const recall_counts& counts, summaries& sum
)
{
    std::vector<std::string> rules;
    for (const auto& pr : probes)
        if (pr.kind == probe_kind::rule)
            rules.push_back(pr.text);
    sum.recall_rules = std::move(rules);
    j_.evidence.recall = counts;
    cx_.logger().debug(
        "recall gate: {} probes, {} found, {} repaired, {} verbatim",
        counts.probes,
        counts.found,
        counts.repaired,
        counts.verbatim
    );
}

}  // namespace agentctx::runtime::detail
