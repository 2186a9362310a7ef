// Pinned entries: the policy, the compaction's carried copies, and the labelled block for Pi.
#include <agentctx/compaction/pinned.hpp>

#include <agentctx/compaction/projection.hpp>

#include "settings_strings.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>

namespace agentctx::compaction {

namespace {

bool pinnable(const entry& e)
{
    if (e.type == entry_type::custom_message)
        return true;
    return e.type == entry_type::message && e.message && e.message->role == role::user;
}

// A carried tool exchange (a running job's launch): the assistant's calls and their results.
bool exchange_part(const entry& e)
{
    return e.type == entry_type::message && e.message &&
           (e.message->role == role::assistant || e.message->role == role::tool_result);
}

// Keeps a carried exchange only whole: an assistant whose every call has a carried result right
// after it, and those results (a hand-edited list must not break the tool pairing of requests).
void drop_broken_exchanges(std::vector<carried_entry>& items)
{
    std::vector<bool> keep(items.size(), true);
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        const message& m = *items[i].msg;
        if (m.role == role::tool_result)
        {
            keep[i] = false;  // kept below only as the answer of the assistant before it
            continue;
        }
        if (m.role != role::assistant)
            continue;
        std::vector<std::string> open;
        for (const auto& b : m.content.blocks)
            if (const auto* c = std::get_if<tool_call_block>(&b))
                open.push_back(c->id);
        std::size_t j = i + 1;
        for (; j < items.size() && items[j].msg->role == role::tool_result; ++j)
            std::erase(open, items[j].msg->tool_call_id);
        keep[i] = open.empty();
        for (std::size_t k = i + 1; k < j; ++k)
            keep[k] = keep[i];
        i = j - 1;
    }
    std::size_t w = 0;
    for (std::size_t i = 0; i < items.size(); ++i)
        if (keep[i] && w++ != i)
            items[w - 1] = std::move(items[i]);
    items.resize(w);
}

bool contains(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

result<pin_policy> parse_pin_settings(const boost::json::object& settings, diagnostics& diag)
{
    pin_policy out;
    const auto* section = settings.if_contains("pinned");
    if (!section)
        return out;
    if (!section->is_object())
    {
        diag.field = "pinned";
        diag.message = "settings: field 'pinned': expected an object";
        return errc::invalid_settings;
    }
    if (auto r = detail::read_settings_strings(
            section->get_object(), "pinned", "customTypes", out.custom_types, diag
        );
        !r)
        return r.error();
    if (auto r = detail::read_settings_strings(section->get_object(), "pinned", "ids", out.ids, diag); !r)
        return r.error();
    if (auto r = detail::read_settings_strings(
            section->get_object(), "pinned", "snapshotTypes", out.snapshot_types, diag
        );
        !r)
        return r.error();
    return out;
}

bool pin_policy::pins(const entry& e) const
{
    if (empty() || !pinnable(e))
        return false;
    if (contains(ids, e.id))
        return true;
    if (e.type == entry_type::custom_message &&
        (contains(custom_types, e.custom_type) || contains(snapshot_types, e.custom_type)))
        return true;
    return predicate && predicate(e);
}

const boost::json::array* pinned_of(const entry& compaction)
{
    if (compaction.type != entry_type::compaction || !compaction.details.is_object())
        return nullptr;
    const auto* ours = compaction.details.get_object().if_contains("agentctx");
    if (!ours || !ours->is_object())
        return nullptr;
    const auto* pinned = ours->get_object().if_contains("pinned");
    return pinned && pinned->is_array() && !pinned->get_array().empty() ? &pinned->get_array() : nullptr;
}

std::vector<carried_entry> carried_entries(const boost::json::array& pinned)
{
    std::vector<carried_entry> out;
    for (const auto& v : pinned)
    {
        if (!v.is_object())
            continue;
        diagnostics diag;
        auto e = decode_entry(v.get_object(), diag);
        if (!e || (!pinnable(*e) && !exchange_part(*e)))
            continue;
        if (auto m = message_of_entry(*e))
            out.push_back({std::move(*e), std::move(m), &v.get_object()});
    }
    drop_broken_exchanges(out);
    return out;
}

std::vector<std::shared_ptr<const message>> pinned_messages(const entry& compaction)
{
    std::vector<std::shared_ptr<const message>> out;
    if (const auto* pinned = pinned_of(compaction))
        for (auto& c : carried_entries(*pinned))
            out.push_back(std::move(c.msg));
    return out;
}

std::string render_pinned_block(const boost::json::array& pinned)
{
    std::string body;
    for (const auto& c : carried_entries(pinned))
    {
        if (c.msg->role == role::assistant)
        {
            // A running job's launch: the calls, which Pi's text block can only name.
            body += "[assistant: running background job launch]\n" + content_text(c.msg->content);
            for (const auto& b : c.msg->content.blocks)
                if (const auto* call = std::get_if<tool_call_block>(&b))
                    body += "\ncall " + call->id + ": " + call->name + " " +
                            boost::json::serialize(call->arguments);
            body += "\n";
            continue;
        }
        if (c.msg->role == role::tool_result)
            body += "[toolResult " + c.msg->tool_name + " " + c.msg->tool_call_id + "]\n";
        else
            body += c.source.type == entry_type::custom_message ? "[" + c.source.custom_type + "]\n"
                                                                : std::string("[user]\n");
        body += content_text(c.msg->content);
        body += "\n";
    }
    if (body.empty())
        return {};
    return "\n\n" + std::string(pinned_block_open) + body + std::string(pinned_block_close);
}

std::string pinned_prompt_note(const boost::json::array& pinned)
{
    if (pinned.empty())
        return {};
    std::vector<std::string> kinds;
    for (const auto& v : pinned)
    {
        const auto* o = v.if_object();
        const auto* t = o ? o->if_contains("customType") : nullptr;
        const auto* m = o ? o->if_contains("message") : nullptr;
        const auto* r = m && m->is_object() ? m->get_object().if_contains("role") : nullptr;
        const bool exchange =
            r && r->is_string() && (r->get_string() == "assistant" || r->get_string() == "toolResult");
        std::string kind = t && t->is_string() ? std::string(t->get_string())
                           : exchange          ? std::string("running background job launch")
                                               : std::string("user message");
        if (!contains(kinds, kind))
            kinds.push_back(std::move(kind));
    }
    std::string list;
    for (const auto& k : kinds)
        list += (list.empty() ? "" : ", ") + k;
    return "\n\n<kept-verbatim>\n" + std::to_string(pinned.size()) + " pinned entr" +
           (pinned.size() == 1 ? "y" : "ies") + " (" + list +
           ") are kept verbatim right after this summary and are not part of the conversation above. Do not "
           "restate, paraphrase or replace them; summarize only the rest.\n</kept-verbatim>";
}

std::string strip_pinned_block(std::string_view summary)
{
    const auto open = summary.rfind(pinned_block_open);
    if (open == std::string_view::npos)
        return std::string(summary);
    const auto close = summary.find(pinned_block_close, open);
    if (close == std::string_view::npos || close + pinned_block_close.size() != summary.size())
        return std::string(summary);  // not our trailing block: leave the text alone
    auto head = summary.substr(0, open);
    while (!head.empty() && head.back() == '\n')
        head.remove_suffix(1);
    return std::string(head);
}

}  // namespace agentctx::compaction
