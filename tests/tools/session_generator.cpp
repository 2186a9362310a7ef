// The session generator: a deterministic random agent that writes what Pi would write.
#include "session_generator.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <random>
#include <unordered_set>
#include <vector>

namespace agentctx::tools {

namespace json = boost::json;

namespace {

const char* const files[] = {
    "src/main.cpp",
    "src/session.cpp",
    "src/session.hpp",
    "include/api.hpp",
    "tests/session_test.cpp",
    "CMakeLists.txt",
    "README.md",
    "src/parser/lexer.cpp",
    "src/parser/ast.hpp",
    "docs/design.md",
    "src/util/日本語.txt",
    "scripts/build.sh",
};
const char* const words[] = {
    "the",    "session", "parser",  "returns", "error",   "because", "buffer",   "index", "token", "must",
    "never",  "always",  "compile", "test",    "failing", "fix",     "function", "value", "line",  "🚀",
    "config", "strand",  "timeout", "retry",   "cache",   "résumé",  "handler",  "queue", "async", "summary",
};

class generator
{
public:
    generator(const generator_options& o, const std::function<void(const std::string&)>& sink)
        : o_(o), sink_(sink), rng_(o.seed)
    {}

    void run()
    {
        char sid[40];
        std::snprintf(
            sid,
            sizeof sid,
            "019bc1cc-%04x-7%03x-a790-%012llx",
            pick(0xffff),
            pick(0xfff),
            static_cast<unsigned long long>(o_.seed)
        );
        json::object h;
        h["type"] = "session";
        if (o_.version >= 2)
            h["version"] = o_.version;
        h["id"] = sid;
        h["timestamp"] = iso(clock_);
        h["cwd"] = "/home/dev/project";
        write(h);
        json::object mc = base("model_change");
        mc["provider"] = "anthropic";
        mc["modelId"] = "claude-sonnet-4-5";
        emit(std::move(mc));
        json::object tl = base("thinking_level_change");
        tl["thinkingLevel"] = "medium";
        emit(std::move(tl));
        if (pi16())
            system_message(true);
        std::size_t turn = 0;
        while (written_ < o_.entries)
        {
            ++turn;
            if (o_.version >= 2 && turn > 3 && chance(o_.branch_rate) && turn_starts_.size() > 2)
                branch_back();
            if (o_.compaction_every && turn % o_.compaction_every == 0)
                compaction();
            one_turn();
        }
    }

private:
    bool pi16() const { return o_.pi16 && o_.version >= 3; }

    // A system message: the full prompt at session start, later a patch of changed sections,
    // sometimes a removed section or a tool-set change.
    void system_message(bool initial)
    {
        json::object sections, m;
        std::vector<std::string> removed_tools;
        json::array added_tools;
        auto set_section = [&](const std::string& name, json::value v) {
            sections[name] = v;
            if (v.is_null())
                prompt_sections_.erase(name);
            else
                prompt_sections_[name] = v;
        };
        auto add_tool = [&](const std::string& name) {
            json::object t{
                {"name", name},
                {"description", "The " + name + " tool: " + sentence(6)},
                {"parameters",
                 json::object{
                     {"type", "object"},
                     {"properties", json::object{{"path", json::object{{"type", "string"}}}}}}}};
            for (auto it = tools_.begin(); it != tools_.end(); ++it)
                if (it->as_object().at("name").as_string() == name)
                {
                    *it = t;
                    added_tools.push_back(t);
                    return;
                }
            tools_.push_back(t);
            added_tools.push_back(t);
        };
        if (initial)
        {
            set_section("preamble", json::value("You are an expert coding assistant. " + sentence(30)));
            set_section("tools", "<tools>\n- read\n- edit\n- bash\n</tools>");
            set_section("cwd", "<cwd>\n/home/dev/project\n</cwd>");
            for (const char* t : {"read", "edit", "write", "bash"})
                add_tool(t);
        }
        else
        {
            set_section(
                chance(0.5) ? "skills" : "guidelines", json::value("<skills>" + sentence(12) + "</skills>")
            );
            if (chance(0.3) && prompt_sections_.contains("skills"))
                set_section("skills", nullptr);
            if (chance(0.3))
                add_tool(chance(0.5) ? "grep" : "find");
            if (chance(0.2) && !tools_.empty())
            {
                const std::string name(tools_.back().as_object().at("name").as_string());
                removed_tools.push_back(name);
                tools_.pop_back();
            }
        }
        m["role"] = "system";
        m["content"] = "";
        m["sections"] = std::move(sections);
        auto o = message_entry(std::move(m));
        auto& msg = o["message"].as_object();
        if (!added_tools.empty())
            msg["toolsAdded"] = std::move(added_tools);
        if (!removed_tools.empty())
        {
            json::array r;
            for (const auto& n : removed_tools)
                r.push_back(json::object{{"name", n}});
            msg["toolsRemoved"] = std::move(r);
        }
        emit(std::move(o));
    }

    // The replayed prompt as Pi 1.6's appendCompaction stores it.
    json::object system_checkpoint()
    {
        json::object m{{"role", "system"}, {"content", ""}};
        if (!prompt_sections_.empty())
            m["sections"] = prompt_sections_;
        if (!tools_.empty())
            m["toolsAdded"] = tools_;
        m["timestamp"] = clock_;
        return m;
    }

    void context_edit(const std::string& target, json::value replacement)
    {
        auto e = base("context_edit");
        e["targetId"] = target;
        e["replacement"] = std::move(replacement);
        emit(std::move(e));
    }

    void usage_entry()
    {
        auto u = base("usage");
        u["kind"] = "cache_warm";
        u["provider"] = "anthropic";
        u["model"] = "claude-sonnet-4-5";
        u["usage"] = usage(context_tokens_, 1);
        emit(std::move(u));
    }

    // A failed attempt as Pi 1.6 records its recovery: the error (or early length stop), then
    // context_edit omissions for it and its tool results.
    void failed_attempt()
    {
        json::object m;
        m["role"] = "assistant";
        const bool length = chance(0.4);
        json::array content;
        std::string call_id;
        if (length)
        {
            content.push_back(json::object{{"type", "text"}, {"text", "Partial " + sentence(10)}});
            if (chance(0.5))
            {
                call_id = "toolu_len" + std::to_string(written_);
                content.push_back(json::object{
                    {"type", "toolCall"},
                    {"id", call_id},
                    {"name", "read"},
                    {"arguments", json::object{{"path", files[0]}}}});
            }
        }
        m["content"] = std::move(content);
        m["api"] = "anthropic-messages";
        m["provider"] = "anthropic";
        m["model"] = "claude-sonnet-4-5";
        m["usage"] = length ? usage(context_tokens_, 900) : usage(0, 0);
        m["stopReason"] = length ? "length" : "error";
        if (!length)
            m["errorMessage"] = "prompt is too long: 213462 tokens > 200000 maximum";
        const std::string failed = emit(message_entry(std::move(m)));
        std::string result;
        if (!call_id.empty())
        {
            json::object t{
                {"role", "toolResult"},
                {"toolCallId", call_id},
                {"toolName", "read"},
                {"content",
                 json::array{json::object{
                     {"type", "text"}, {"text", "Tool not executed: the response was truncated."}}}},
                {"isError", true}};
            result = emit(message_entry(std::move(t)));
        }
        context_edit(failed, nullptr);
        if (!result.empty())
            context_edit(result, nullptr);
    }

    std::uint32_t pick(std::uint32_t n) { return static_cast<std::uint32_t>(rng_() % (n + 1)); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

    static std::string iso(std::int64_t ms)
    {
        const std::int64_t secs = ms / 1000;
        std::int64_t days = secs / 86400, rem = secs % 86400;
        // civil_from_days (Howard Hinnant)
        days += 719468;
        const std::int64_t era = days / 146097;
        const std::int64_t doe = days - era * 146097;
        const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        std::int64_t y = yoe + era * 400;
        const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        const std::int64_t mp = (5 * doy + 2) / 153;
        const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
        const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
        y += m <= 2;
        char buf[64];
        std::snprintf(
            buf,
            sizeof buf,
            "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ",
            (long long)y,
            (long long)m,
            (long long)d,
            (long long)(rem / 3600),
            (long long)(rem % 3600 / 60),
            (long long)(rem % 60),
            (long long)(ms % 1000)
        );
        return buf;
    }

    std::string sentence(std::size_t n)
    {
        std::string s;
        for (std::size_t i = 0; i < n; ++i)
        {
            if (i)
                s += ' ';
            s += words[pick(std::size(words) - 1)];
        }
        return s;
    }

    std::string blob(std::size_t bytes)
    {
        std::string s;
        s.reserve(bytes + 64);
        std::size_t line = 1;
        while (s.size() < bytes)
        {
            s += std::to_string(line++);
            s += ": ";
            s += sentence(6 + pick(8));
            s += '\n';
        }
        return s;
    }

    std::string image_data() { return std::string(400 + pick(800), 'A'); }

    std::string new_id()
    {
        for (;;)
        {
            char buf[9];
            std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rng_() & 0xffffffffu));
            if (ids_.insert(buf).second)  // unique within the session, as Pi guarantees
                return buf;
        }
    }

    json::object base(const char* type)
    {
        clock_ += 200 + pick(3000);
        json::object o;
        o["type"] = type;
        if (o_.version >= 2)
        {
            o["id"] = new_id();
            if (leaf_.empty())
                o["parentId"] = nullptr;
            else
                o["parentId"] = leaf_;
        }
        o["timestamp"] = iso(clock_);
        return o;
    }

    void write(const json::object& o)
    {
        std::string line;
        compaction::stringify_to(line, o);
        line += '\n';
        sink_(line);
    }

    // Appends an entry as a child of the leaf and moves the leaf, like SessionManager.append*.
    std::string emit(json::object o)
    {
        write(o);
        ++written_;
        std::string id = o_.version >= 2 ? std::string(o["id"].as_string()) : std::to_string(written_);
        path_.push_back(id);
        leaf_ = id;
        return id;
    }

    json::object message_entry(json::object msg)
    {
        auto o = base("message");
        msg["timestamp"] = clock_;
        o["message"] = std::move(msg);
        return o;
    }

    json::object usage(std::int64_t input, std::int64_t output)
    {
        const std::int64_t cache_read = input / 2;
        json::object u;
        u["input"] = input - cache_read;
        u["output"] = output;
        u["cacheRead"] = cache_read;
        u["cacheWrite"] = 0;
        u["totalTokens"] = input + output;
        json::object c;
        c["input"] = 0.003 * static_cast<double>(input) / 1000;
        c["output"] = 0.015 * static_cast<double>(output) / 1000;
        c["cacheRead"] = 0;
        c["cacheWrite"] = 0;
        c["total"] = 0.003 * static_cast<double>(input) / 1000 + 0.015 * static_cast<double>(output) / 1000;
        u["cost"] = c;
        return u;
    }

    void assistant(json::array content, const char* stop, std::int64_t out_tokens)
    {
        json::object m;
        m["role"] = "assistant";
        m["content"] = std::move(content);
        m["api"] = "anthropic-messages";
        m["provider"] = "anthropic";
        m["model"] = "claude-sonnet-4-5";
        context_tokens_ += out_tokens;
        m["usage"] = usage(context_tokens_, out_tokens);
        m["stopReason"] = stop;
        emit(message_entry(std::move(m)));
    }

    void one_turn()
    {
        json::object u;
        u["role"] = "user";
        const std::string prompt =
            "Please " + sentence(8 + pick(30)) + ". You must never " + sentence(4) + ".";
        if (chance(o_.image_rate))
        {
            json::array blocks;
            blocks.push_back(json::object{{"type", "text"}, {"text", prompt}});
            blocks.push_back(json::object{
                {"type", "image"}, {"data", image_data()}, {"mimeType", "image/png"}});
            u["content"] = std::move(blocks);
        }
        else
            u["content"] = prompt;
        context_tokens_ += static_cast<std::int64_t>(prompt.size() / 4);
        if (pi16() && chance(0.12))
            system_message(false);  // Pi writes the patch before the new user message
        turn_starts_.push_back(leaf_);
        const std::string prompt_id = emit(message_entry(std::move(u)));
        if (pi16() && chance(0.03))
            context_edit(prompt_id, json::value(json::object{{"content", "Shorter: " + sentence(6)}}));

        const std::size_t rounds = chance(o_.tool_turn_rate) ? 1 + pick(5) : 0;
        for (std::size_t r = 0; r < rounds && written_ < o_.entries; ++r)
        {
            json::array content;
            if (chance(0.5))
                content.push_back(json::object{{"type", "thinking"}, {"thinking", sentence(20 + pick(40))}});
            content.push_back(json::object{
                {"type", "text"}, {"text", "I will " + sentence(6 + pick(12)) + "."}});
            const std::size_t calls = 1 + (chance(0.3) ? pick(2) : 0);
            std::vector<std::pair<std::string, std::string>> made;
            for (std::size_t c = 0; c < calls; ++c)
            {
                static const char* const tools[] = {"read", "read", "edit", "write", "bash", "grep"};
                const std::string tool = tools[pick(5)];
                json::object args;
                const std::string file = files[pick(std::size(files) - 1)];
                if (tool == "read")
                {
                    args["path"] = file;
                    if (chance(0.3))
                        args["offset"] = 1 + pick(200);
                }
                else if (tool == "edit")
                {
                    args["path"] = file;
                    args["edits"] =
                        json::array{json::object{{"oldText", sentence(5)}, {"newText", sentence(6)}}};
                }
                else if (tool == "write")
                {
                    args["path"] = file;
                    args["content"] = blob(200 + pick(800));
                }
                else if (tool == "bash")
                    args["command"] = "cmake --build build -j2 && ctest --test-dir build";
                else
                {
                    args["pattern"] = words[pick(std::size(words) - 1)];
                    args["path"] = "src";
                }
                char call_id[32];
                std::snprintf(
                    call_id, sizeof call_id, "toolu_%016llx", static_cast<unsigned long long>(rng_())
                );
                content.push_back(json::object{
                    {"type", "toolCall"}, {"id", call_id}, {"name", tool}, {"arguments", args}});
                made.emplace_back(call_id, tool);
            }
            assistant(std::move(content), "toolUse", 60 + pick(400));
            const bool interleave = made.size() >= 2 && chance(o_.interleave_rate);
            for (std::size_t k = 0; k < made.size(); ++k)
            {
                const auto& [call_id, tool] = made[k];
                if (written_ >= o_.entries)
                    break;
                if (interleave && k + 1 == made.size())
                {
                    // A progress note before the last result: the round now spans an assistant message.
                    json::array note;
                    note.push_back(json::object{{"type", "text"}, {"text", "Still waiting on " + tool + "."}}
                    );
                    assistant(std::move(note), "stop", 20);
                    if (written_ >= o_.entries)
                        break;
                }
                json::object t;
                t["role"] = "toolResult";
                t["toolCallId"] = call_id;
                t["toolName"] = tool;
                // Heavy tail: most outputs are small, a few are huge.
                const double scale = std::exponential_distribution<double>(1.0)(rng_);
                const std::size_t bytes =
                    static_cast<std::size_t>(static_cast<double>(o_.mean_tool_output) * scale);
                json::array blocks;
                blocks.push_back(json::object{{"type", "text"}, {"text", blob(bytes)}});
                if (chance(o_.image_rate))
                    blocks.push_back(json::object{
                        {"type", "image"}, {"data", image_data()}, {"mimeType", "image/png"}});
                t["content"] = std::move(blocks);
                t["isError"] = chance(0.05);
                context_tokens_ += static_cast<std::int64_t>(bytes / 4);
                const std::string result_id = emit(message_entry(std::move(t)));
                if (pi16() && bytes > o_.mean_tool_output && chance(0.2) && written_ < o_.entries)
                    context_edit(
                        result_id,
                        json::value(json::object{
                            {"content",
                             json::array{json::object{
                                 {"type", "text"},
                                 {"text", "[tool output elided: " + std::to_string(bytes / 1024) + " KB]"}}}}}
                        )
                    );
            }
            if (pi16() && chance(0.04) && written_ < o_.entries)
                failed_attempt();
        }
        if (written_ < o_.entries && chance(0.05))
        {
            json::object b;
            b["role"] = "bashExecution";
            b["command"] = "git status";
            b["output"] = blob(100 + pick(400));
            b["exitCode"] = 0;
            b["cancelled"] = false;
            b["truncated"] = false;
            emit(message_entry(std::move(b)));
        }
        if (written_ < o_.entries)
        {
            json::array content;
            content.push_back(json::object{
                {"type", "text"}, {"text", "Done: " + sentence(20 + pick(60)) + "."}});
            assistant(std::move(content), "stop", 100 + pick(600));
        }
        if (pi16() && written_ < o_.entries && chance(0.05))
            usage_entry();
        if (o_.version >= 2 && written_ < o_.entries && chance(o_.metadata_rate))
        {
            auto l = base("label");
            l["targetId"] = leaf_;
            l["label"] = "checkpoint-" + std::to_string(written_);
            emit(std::move(l));
        }
    }

    void branch_back()
    {
        // Go back to the start of an earlier turn, as /tree does, leaving a branch summary.
        const std::string target =
            turn_starts_[turn_starts_.size() - 1 - pick(std::min<std::size_t>(5, turn_starts_.size() - 1))];
        std::size_t pos = path_.size();
        for (std::size_t i = 0; i < path_.size(); ++i)
            if (path_[i] == target)
                pos = i;
        if (pos == path_.size())
            return;  // that turn lies on an abandoned branch
        path_.resize(pos + 1);
        leaf_ = target;
        auto b = base("branch_summary");
        b["fromId"] = target;
        b["summary"] = "The user explored a different conversation branch before returning here.\nSummary of "
                       "that exploration:\n\n## Goal\n" +
                       sentence(12);
        b["details"] = json::object{{"readFiles", json::array{files[0]}}, {"modifiedFiles", json::array{}}};
        b["fromHook"] = false;
        emit(std::move(b));
        context_tokens_ /= 2;
    }

    void compaction()
    {
        if (turn_starts_.size() < 2)
            return;
        // Keep from the start of the previous turn (the entry after the recorded leaf).
        const std::string& before = turn_starts_[turn_starts_.size() - 1];
        std::string first_kept;
        for (std::size_t i = 0; i + 1 < path_.size(); ++i)
            if (path_[i] == before)
                first_kept = path_[i + 1];
        if (first_kept.empty())
            return;
        auto c = base("compaction");
        c["summary"] = "## Goal\n" + sentence(15) + "\n\n## Progress\n### Done\n- [x] " + sentence(10) +
                       "\n\n<read-files>\nsrc/main.cpp\n</read-files>";
        if (o_.version >= 2)
            c["firstKeptEntryId"] = first_kept;
        else
            c["firstKeptEntryIndex"] = written_ > 4 ? static_cast<std::int64_t>(written_ - 3) : 1;
        c["tokensBefore"] = context_tokens_;
        c["details"] =
            json::object{{"readFiles", json::array{"src/main.cpp"}}, {"modifiedFiles", json::array{}}};
        if (pi16())
        {
            if (chance(0.25))
                c["firstKeptEntryId"] = c["id"];  // retain-none
            c["usage"] = usage(context_tokens_, 800);
        }
        c["fromHook"] = false;
        if (pi16() && !prompt_sections_.empty())
        {
            auto checkpoint = system_checkpoint();
            checkpoint["timestamp"] = clock_;
            c["systemMessage"] = std::move(checkpoint);
        }
        emit(std::move(c));
        context_tokens_ = context_tokens_ / 5;
    }

    const generator_options& o_;
    const std::function<void(const std::string&)>& sink_;
    std::mt19937_64 rng_;
    std::int64_t clock_ = 1768467600000;  // 2026-01-15T09:00:00.000Z
    std::size_t written_ = 0;
    std::string leaf_;
    std::vector<std::string> path_;         // ids root -> leaf of the active path
    std::vector<std::string> turn_starts_;  // leaf before each user prompt
    std::unordered_set<std::string> ids_;
    std::int64_t context_tokens_ = 3000;
    json::object prompt_sections_;  // the replayed prompt sections (Pi 1.6 style)
    json::array tools_;             // the replayed tool set
};

}  // namespace

void generate_session(const generator_options& opts, const std::function<void(const std::string&)>& sink)
{
    generator(opts, sink).run();
}

void write_session_file(const generator_options& opts, const std::string& path, bool reuse)
{
    if (reuse && std::filesystem::exists(path))
        return;
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f)
        throw std::runtime_error("cannot write " + tmp);
    generate_session(opts, [&](const std::string& line) { std::fwrite(line.data(), 1, line.size(), f); });
    std::fclose(f);
    std::filesystem::rename(tmp, path);
}

std::string generate_session(const generator_options& opts)
{
    std::string out;
    generate_session(opts, [&](const std::string& line) { out += line; });
    return out;
}

}  // namespace agentctx::tools
