// Queued background jobs: the settings, the running jobs of a context, and their texts.
#include <agentctx/compaction/jobs.hpp>

#include <agentctx/compaction/pinned.hpp>

#include "settings_strings.hpp"

#include <algorithm>
#include <regex>

namespace agentctx::compaction {

namespace {

bool contains(const std::vector<std::string>& v, std::string_view s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

// One message of the context with the entry it stands for (a carried entry keeps its own).
struct item
{
    const entry* source = nullptr;
    std::shared_ptr<const message> msg;
};

// The projected messages with their entries; a compaction contributes the entries it carries.
std::vector<item> flatten(std::span<const projected_entry> entries, std::vector<carried_entry>& carried_store)
{
    std::vector<item> out;
    for (const auto& p : entries)
    {
        if (!p.source || p.source->type != entry_type::compaction)
        {
            for (const auto& m : p.messages)
                if (p.source)
                    out.push_back({p.source.get(), m});
            continue;
        }
        if (const auto* pinned = pinned_of(*p.source))
            for (auto& c : carried_entries(*pinned))
                carried_store.push_back(std::move(c));
    }
    // Carried entries precede every later entry: a compaction is the first projected entry.
    std::vector<item> with_carried;
    with_carried.reserve(carried_store.size() + out.size());
    for (const auto& c : carried_store)
        with_carried.push_back({&c.source, c.msg});
    with_carried.insert(with_carried.end(), out.begin(), out.end());
    return with_carried;
}

// The `details` object an entry's message or custom message carries, if any.
const boost::json::object* details_of(const entry& e)
{
    const boost::json::value* d = nullptr;
    if (e.type == entry_type::custom_message)
        d = e.raw.if_contains("details");
    else if (const auto* m = e.raw.if_contains("message"); m && m->is_object())
        d = m->get_object().if_contains("details");
    return d ? d->if_object() : nullptr;
}

// A scalar field as text: a string as is, an integer in decimal; otherwise empty.
std::string scalar_text(const boost::json::object* o, std::string_view key)
{
    const auto* v = o && !key.empty() ? o->if_contains(key) : nullptr;
    if (!v)
        return {};
    if (v->is_string())
        return std::string(v->get_string());
    if (v->is_int64())
        return std::to_string(v->get_int64());
    if (v->is_uint64())
        return std::to_string(v->get_uint64());
    return {};
}

const job_rule* matching_rule(const job_rules& rules, const tool_call_block& call)
{
    for (const auto& r : rules.rules)
        if (contains(r.tools, call.name) || (r.launches && r.launches(call)))
            return &r;
    return nullptr;
}

std::string read_job_id(const job_rule& r, const tool_call_block& call, const item* result)
{
    if (r.id_source == job_rule::id_from::arguments)
        return scalar_text(&call.arguments, r.id_field);
    if (!result)
        return {};
    if (r.id_source == job_rule::id_from::result_details)
        return scalar_text(details_of(*result->source), r.id_field);
    std::smatch m;
    const std::string text = content_text(result->msg->content);
    if (!std::regex_search(text, m, std::regex(r.id_pattern, std::regex::ECMAScript)))
        return {};
    return m.size() > 1 ? m[1].str() : m[0].str();
}

bool completes(const job_rule& r, const item& it, const std::string& id)
{
    if (r.completes)
        return r.completes(*it.source, id);
    const bool kind = (it.source->type == entry_type::custom_message &&
                       contains(r.completion_custom_types, it.source->custom_type)) ||
                      (it.msg->role == role::tool_result && contains(r.completion_tools, it.msg->tool_name));
    if (!kind)
        return false;
    if (!r.completion_field.empty())
        return scalar_text(details_of(*it.source), r.completion_field) == id;
    return content_text(it.msg->content).find(id) != std::string::npos;
}

bool launches_calls(const message& m)
{
    return m.role == role::assistant && m.stop_reason != stop_reason::error &&
           m.stop_reason != stop_reason::aborted;
}

// The job `call` of the assistant at `at` launched, unless it failed, never got an id, or completed.
std::optional<running_job> job_of(
    const std::vector<item>& items, std::size_t at, const tool_call_block& call, const job_rule& rule
)
{
    running_job job{{}, call.name, call.id, {items[at].source->id}};
    const item* result = nullptr;
    std::size_t end = at + 1;
    for (; end < items.size() && items[end].msg->role != role::assistant; ++end)
    {
        const message& m = *items[end].msg;
        if (m.role != role::tool_result)
            continue;
        const auto& calls = items[at].msg->content.blocks;
        const bool ours = std::any_of(calls.begin(), calls.end(), [&](const content_block& b) {
            const auto* c = std::get_if<tool_call_block>(&b);
            return c && c->id == m.tool_call_id;
        });
        if (ours && !contains(job.entry_ids, items[end].source->id))
            job.entry_ids.push_back(items[end].source->id);
        if (m.tool_call_id == call.id && !result)
            result = &items[end];
    }
    if (result && result->msg->is_error)
        return std::nullopt;
    job.job_id = read_job_id(rule, call, result);
    if (job.job_id.empty() && (result || rule.id_source == job_rule::id_from::arguments))
        return std::nullopt;  // the launch recorded no id: nothing was queued that could complete
    if (!job.job_id.empty())
        for (std::size_t k = at + 1; k < items.size(); ++k)
            if (&items[k] != result && completes(rule, items[k], job.job_id))
                return std::nullopt;
    return job;
}

}  // namespace

std::vector<running_job> find_running_jobs(std::span<const projected_entry> entries, const job_rules& rules)
{
    std::vector<running_job> out;
    if (rules.empty())
        return out;
    std::vector<carried_entry> carried;
    const auto items = flatten(entries, carried);
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        if (!launches_calls(*items[i].msg))
            continue;
        for (const auto& b : items[i].msg->content.blocks)
            if (const auto* c = std::get_if<tool_call_block>(&b))
                if (const auto* rule = matching_rule(rules, *c))
                    if (auto job = job_of(items, i, *c, *rule))
                        out.push_back(std::move(*job));
    }
    return out;
}

bool in_running_job(const std::vector<running_job>& jobs, std::string_view entry_id)
{
    return std::any_of(jobs.begin(), jobs.end(), [&](const running_job& j) {
        return contains(j.entry_ids, entry_id);
    });
}

std::string render_running_jobs_block(const std::vector<running_job>& jobs)
{
    if (jobs.empty())
        return {};
    std::string body;
    for (const auto& j : jobs)
        body += "- job " + (j.job_id.empty() ? std::string("(id not recorded yet)") : j.job_id) + ": `" +
                j.tool_name + "` (call " + j.call_id + "), queued or running; no completion recorded\n";
    return "\n\n" + std::string(running_jobs_block_open) +
           "Background jobs still running (their launch is kept verbatim after this summary):\n" + body +
           std::string(running_jobs_block_close);
}

std::string strip_running_jobs_block(std::string_view summary)
{
    const auto open = summary.rfind(running_jobs_block_open);
    if (open == std::string_view::npos)
        return std::string(summary);
    const auto close = summary.find(running_jobs_block_close, open);
    if (close == std::string_view::npos || close + running_jobs_block_close.size() != summary.size())
        return std::string(summary);
    auto head = summary.substr(0, open);
    while (!head.empty() && head.back() == '\n')
        head.remove_suffix(1);
    return std::string(head);
}

std::string running_job_outcome_text(const running_job& job)
{
    const std::string which =
        job.job_id.empty() ? "a background job (its id is not recorded yet)" : "background job " + job.job_id;
    return "This `" + job.tool_name + "` call launched " + which +
           ": queued work whose completion a later entry reports, not this call. No result is recorded here, "
           "so "
           "do not assume the job has finished. Unless a later entry reports its completion, it is queued or "
           "still running: check its status before launching it again.";
}

namespace {

result<void> fail(diagnostics& diag, std::string field, std::string_view what)
{
    diag.message = "settings: field '" + field + "': " + std::string(what);
    diag.field = std::move(field);
    return errc::invalid_settings;
}

const boost::json::object* object_at(
    const boost::json::object& o,
    std::string_view key,
    const std::string& path,
    diagnostics& diag,
    result<void>& status
)
{
    const auto* v = o.if_contains(key);
    if (!v || !v->is_object())
    {
        status = fail(diag, path, v ? "expected an object" : "missing");
        return nullptr;
    }
    return &v->get_object();
}

result<void> read_string(
    const boost::json::object& o,
    std::string_view key,
    const std::string& path,
    std::string& out,
    diagnostics& diag
)
{
    const auto* v = o.if_contains(key);
    if (!v)
        return {};
    if (!v->is_string() || v->get_string().empty())
        return fail(diag, path, "expected a non-empty string");
    out = std::string(v->get_string());
    return {};
}

result<void> read_id_spec(
    const boost::json::object& id, const std::string& at, job_rule& r, diagnostics& diag
)
{
    std::string from;
    if (auto ok = read_string(id, "from", at + ".from", from, diag); !ok)
        return ok;
    if (from == "arguments")
        r.id_source = job_rule::id_from::arguments;
    else if (from == "resultDetails")
        r.id_source = job_rule::id_from::result_details;
    else if (from == "resultText")
        r.id_source = job_rule::id_from::result_text;
    else
        return fail(diag, at + ".from", "expected \"arguments\", \"resultDetails\" or \"resultText\"");
    if (auto ok = read_string(id, "field", at + ".field", r.id_field, diag); !ok)
        return ok;
    if (auto ok = read_string(id, "pattern", at + ".pattern", r.id_pattern, diag); !ok)
        return ok;
    if (r.id_source == job_rule::id_from::result_text)
    {
        if (r.id_pattern.empty())
            return fail(diag, at + ".pattern", "missing (resultText reads the id with a pattern)");
        try
        {
            std::regex(r.id_pattern, std::regex::ECMAScript);
        }
        catch (const std::regex_error&)
        {
            return fail(diag, at + ".pattern", "not a valid regular expression");
        }
    }
    else if (r.id_field.empty())
        return fail(diag, at + ".field", "missing (the id is read from this key)");
    return {};
}

result<void> read_rule(const boost::json::value& v, const std::string& at, job_rule& r, diagnostics& diag)
{
    if (!v.is_object())
        return fail(diag, at, "expected an object");
    const auto& o = v.get_object();
    for (const auto& kv : o)
        if (kv.key() != "tools" && kv.key() != "id" && kv.key() != "completedBy")
            return fail(diag, at + "." + std::string(kv.key()), "unknown field");
    if (auto ok = detail::read_settings_strings(o, at.c_str(), "tools", r.tools, diag); !ok)
        return ok;
    if (r.tools.empty())
        return fail(diag, at + ".tools", "expected at least one tool name");
    result<void> status;
    const auto* id = object_at(o, "id", at + ".id", diag, status);
    if (!id)
        return status;
    if (auto ok = read_id_spec(*id, at + ".id", r, diag); !ok)
        return ok;
    const auto* done = object_at(o, "completedBy", at + ".completedBy", diag, status);
    if (!done)
        return status;
    const std::string dp = at + ".completedBy";
    if (auto ok = detail::read_settings_strings(*done, dp.c_str(), "tools", r.completion_tools, diag); !ok)
        return ok;
    if (auto ok =
            detail::read_settings_strings(*done, dp.c_str(), "customTypes", r.completion_custom_types, diag);
        !ok)
        return ok;
    if (auto ok = read_string(*done, "field", dp + ".field", r.completion_field, diag); !ok)
        return ok;
    if (r.completion_tools.empty() && r.completion_custom_types.empty())
        return fail(diag, dp, "names no tool and no custom type that completes the job");
    return {};
}

}  // namespace

result<job_rules> parse_job_settings(const boost::json::object& settings, diagnostics& diag)
{
    job_rules out;
    const auto* section = settings.if_contains("jobs");
    if (!section)
        return out;
    if (!section->is_object())
        return fail(diag, "jobs", "expected an object").error();
    const auto* rules = section->get_object().if_contains("rules");
    if (!rules)
        return out;
    if (!rules->is_array())
        return fail(diag, "jobs.rules", "expected an array").error();
    for (std::size_t i = 0; i < rules->get_array().size(); ++i)
    {
        job_rule r;
        if (auto ok = read_rule(rules->get_array()[i], "jobs.rules[" + std::to_string(i) + "]", r, diag); !ok)
            return ok.error();
        out.rules.push_back(std::move(r));
    }
    return out;
}

}  // namespace agentctx::compaction
