// Test helper: builds Pi-format JSONL text entry by entry, with explicit ids and parent links.
#pragma once

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/session_log.hpp>
#include <agentctx/compaction/settings.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace agentctx::test {

namespace json = boost::json;

/// Text of exactly `n` tokens under the chars/4 estimate.
inline std::string tokens(std::size_t n)
{
    return std::string(n * 4, 'x');
}

class session_text
{
public:
    explicit session_text(int version = 3, std::string id = "sess-1")
    {
        json::object h{{"type", "session"}};
        if (version >= 2)
            h["version"] = version;
        h["id"] = id;
        h["timestamp"] = "2026-01-15T09:00:00.000Z";
        h["cwd"] = "/home/dev/project";
        line(h);
    }

    /// Moves the clock: the next entry is written `seconds` (+1) after the previous one.
    session_text& wait(std::int64_t seconds)
    {
        ms_ += seconds * 1000;
        return *this;
    }

    /// Appends a raw line (no newline added by the caller).
    session_text& raw(std::string_view l)
    {
        text += l;
        text += '\n';
        return *this;
    }

    /// Appends an entry: type, id, parentId (the current leaf unless `parent` given), timestamp, fields.
    session_text& entry(
        std::string_view type, std::string_view id, json::object fields, const char* parent = nullptr
    )
    {
        json::object o{{"type", type}, {"id", id}};
        const std::string p = parent ? std::string(parent) : leaf;
        if (p.empty() || p == "null")
            o["parentId"] = nullptr;
        else
            o["parentId"] = p;
        o["timestamp"] = next_time();
        for (auto& kv : fields)
            o[kv.key()] = kv.value();
        line(o);
        leaf = std::string(id);
        return *this;
    }

    session_text& message(std::string_view id, json::object msg, const char* parent = nullptr)
    {
        if (!msg.contains("timestamp"))
            msg["timestamp"] = ms_;
        return entry("message", id, {{"message", msg}}, parent);
    }

    session_text& user(std::string_view id, std::string_view text_, const char* parent = nullptr)
    {
        return message(id, {{"role", "user"}, {"content", text_}}, parent);
    }

    session_text& assistant(
        std::string_view id,
        std::string_view text_,
        std::int64_t total_tokens = 0,
        const char* stop = "stop",
        const char* parent = nullptr
    )
    {
        json::object m{
            {"role", "assistant"},
            {"content", json::array{json::object{{"type", "text"}, {"text", text_}}}},
            {"api", "anthropic-messages"},
            {"provider", "anthropic"},
            {"model", "claude-sonnet-4-5"}};
        if (total_tokens)
            m["usage"] = usage(total_tokens);
        m["stopReason"] = stop;
        return message(id, m, parent);
    }

    session_text& tool_call(
        std::string_view id,
        std::string_view call_id,
        std::string_view name,
        json::object args,
        const char* parent = nullptr
    )
    {
        json::object m{
            {"role", "assistant"},
            {"content",
             json::array{
                 json::object{{"type", "toolCall"}, {"id", call_id}, {"name", name}, {"arguments", args}}}},
            {"api", "anthropic-messages"},
            {"provider", "anthropic"},
            {"model", "claude-sonnet-4-5"},
            {"stopReason", "toolUse"}};
        return message(id, m, parent);
    }

    /// An assistant message declaring the calls `call_ids` (all `bash` running `make`).
    session_text& calls(
        std::string_view id, const std::vector<std::string>& call_ids, const char* stop = "toolUse"
    )
    {
        json::array blocks;
        for (const auto& c : call_ids)
            blocks.push_back(json::object{
                {"type", "toolCall"},
                {"id", c},
                {"name", "bash"},
                {"arguments", json::object{{"command", "make"}}}});
        return message(
            id,
            {{"role", "assistant"},
             {"content", blocks},
             {"api", "anthropic-messages"},
             {"provider", "anthropic"},
             {"model", "claude-sonnet-4-5"},
             {"stopReason", stop}}
        );
    }

    session_text& tool_result(
        std::string_view id,
        std::string_view call_id,
        std::string_view name,
        std::string_view text_,
        const char* parent = nullptr
    )
    {
        return message(
            id,
            {{"role", "toolResult"},
             {"toolCallId", call_id},
             {"toolName", name},
             {"content", json::array{json::object{{"type", "text"}, {"text", text_}}}},
             {"isError", false}},
            parent
        );
    }

    session_text& compaction(
        std::string_view id,
        std::string_view first_kept,
        std::string_view summary,
        std::int64_t tokens_before = 1000,
        const char* parent = nullptr
    )
    {
        return entry(
            "compaction",
            id,
            {{"summary", summary},
             {"firstKeptEntryId", first_kept},
             {"tokensBefore", tokens_before},
             {"details", json::object{{"readFiles", json::array{}}, {"modifiedFiles", json::array{}}}},
             {"fromHook", false}},
            parent
        );
    }

    /// A Pi 1.6 system message; `sections` values are strings or null.
    session_text& system(
        std::string_view id,
        json::object sections,
        json::array tools_added = {},
        json::array tools_removed = {},
        std::string_view content = ""
    )
    {
        json::object m{{"role", "system"}, {"content", content}};
        if (!sections.empty())
            m["sections"] = sections;
        m["timestamp"] = ms_;
        if (!tools_added.empty())
            m["toolsAdded"] = tools_added;
        if (!tools_removed.empty())
            m["toolsRemoved"] = tools_removed;
        return message(id, m);
    }
    /// A context_edit: `replacement` null omits the target, else `{content: replacement}`.
    session_text& edit(std::string_view id, std::string_view target, json::value replacement = nullptr)
    {
        json::value r = replacement.is_null() ? json::value(nullptr)
                                              : json::value(json::object{{"content", replacement}});
        return entry("context_edit", id, {{"targetId", target}, {"replacement", r}});
    }
    session_text& custom_message(std::string_view id, std::string_view content)
    {
        return entry("custom_message", id, {{"customType", "note"}, {"content", content}, {"display", true}});
    }
    session_text& model_change(std::string_view id)
    {
        return entry("model_change", id, {{"provider", "anthropic"}, {"modelId", "claude-sonnet-4-5"}});
    }
    session_text& bash(std::string_view id, std::string_view output)
    {
        return message(
            id,
            {{"role", "bashExecution"},
             {"command", ""},
             {"output", output},
             {"exitCode", 0},
             {"cancelled", false},
             {"truncated", false}}
        );
    }

    static json::object usage(std::int64_t total)
    {
        return {
            {"input", total - 100},
            {"output", 100},
            {"cacheRead", 0},
            {"cacheWrite", 0},
            {"totalTokens", total},
            {"cost",
             json::object{{"input", 0}, {"output", 0}, {"cacheRead", 0}, {"cacheWrite", 0}, {"total", 0}}}};
    }

    compaction::session_log load(compaction::load_options opts = {}) const
    {
        compaction::load_report report;
        compaction::diagnostics diag;
        auto log = compaction::session_log::load(text, opts, report, diag);
        EXPECT_TRUE(log.has_value()) << diag.message;
        return log ? std::move(*log) : compaction::session_log{};
    }

    /// The materialized active path.
    std::vector<compaction::entry_ptr> path(compaction::load_options opts = {}) const
    {
        auto log = load(opts);
        std::vector<compaction::entry_ptr> out;
        compaction::diagnostics diag;
        for (auto i : log.active_path())
        {
            auto e = log.get(i, diag);
            EXPECT_TRUE(e.has_value()) << diag.message;
            if (e)
                out.push_back(*e);
        }
        return out;
    }

    std::string text;
    std::string leaf;

private:
    void line(const json::object& o)
    {
        compaction::stringify_to(text, o);
        text += '\n';
    }

    std::string next_time()
    {
        ms_ += 1000;
        const long s = static_cast<long>((ms_ - 1768467600000) / 1000);
        char buf[64];
        std::snprintf(
            buf, sizeof buf, "2026-01-15T%02ld:%02ld:%02ld.000Z", 9 + s / 3600, s / 60 % 60, s % 60
        );
        return buf;
    }

    std::int64_t ms_ = 1768467600000;
};

/// Settings that keep `k` recent tokens (everything else default).
inline compaction::compaction_settings keep(std::int64_t k)
{
    compaction::compaction_settings s;
    s.keep_recent_tokens = k;
    return s;
}

/// The entry ids of context messages, in order.
inline std::vector<std::string> ids(const std::vector<compaction::context_message>& v)
{
    std::vector<std::string> out;
    for (const auto& m : v)
        out.push_back(m.entry_id);
    return out;
}

}  // namespace agentctx::test
