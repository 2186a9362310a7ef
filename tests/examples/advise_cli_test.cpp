// `agentctx advise --stdio`: the JSON-lines protocol of the Pi extension's advisor, driven over
// pipes while the test appends to the session file as Pi would.
#include "file_text.hpp"
#include "session_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace json = boost::json;
using agentctx::test::session_text;

const std::string cli = AGENTCTX_CLI;

// The advisor as a child process with its stdin and stdout on pipes.
class advisor_process
{
public:
    advisor_process()
    {
        int in[2], out[2];
        EXPECT_EQ(::pipe(in), 0);
        EXPECT_EQ(::pipe(out), 0);
        pid_ = ::fork();
        if (pid_ == 0)
        {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::close(in[1]);
            ::close(out[0]);
            ::execl(cli.c_str(), cli.c_str(), "advise", "--stdio", static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        to_ = in[1];
        from_ = out[0];
    }
    ~advisor_process()
    {
        if (to_ >= 0)
            ::close(to_);
        ::close(from_);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }

    /// Sends one raw line, returns the answer line parsed (null when none came within 30 s).
    json::value ask_raw(const std::string& line)
    {
        const std::string l = line + "\n";
        EXPECT_EQ(::write(to_, l.data(), l.size()), static_cast<ssize_t>(l.size()));
        return read_answer();
    }
    json::object ask(const json::object& req)
    {
        const auto v = ask_raw(json::serialize(req));
        return v.is_object() ? v.as_object() : json::object{{"noAnswer", true}};
    }
    /// Closes stdin and returns the exit status once the process ends.
    int finish()
    {
        ::close(to_);
        to_ = -1;
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

private:
    json::value read_answer()
    {
        while (true)
        {
            if (const auto nl = buffer_.find('\n'); nl != std::string::npos)
            {
                const auto line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                boost::system::error_code ec;
                auto v = json::parse(line, ec);
                EXPECT_FALSE(ec) << line;
                return v;
            }
            pollfd p{from_, POLLIN, 0};
            if (::poll(&p, 1, 30000) <= 0)
                return nullptr;
            char buf[65536];
            const auto n = ::read(from_, buf, sizeof buf);
            if (n <= 0)
                return nullptr;
            buffer_.append(buf, static_cast<std::size_t>(n));
        }
    }

    pid_t pid_ = -1;
    int to_ = -1;
    int from_ = -1;
    std::string buffer_;
};

// A session file the test appends to as Pi would: only the text added since the last flush.
class pi_file
{
public:
    explicit pi_file(const std::string& name)
        : path_((std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".jsonl")
          )
                    .string())
    {
        std::filesystem::remove(path_);
    }
    ~pi_file() { std::filesystem::remove(path_); }
    void flush()
    {
        std::ofstream f(path_, std::ios::binary | std::ios::app);
        f << s.text.substr(written_);
        written_ = s.text.size();
    }
    const std::string& path() const { return path_; }

    session_text s;
    /// One turn: a user prompt, a read call and its result of `result_tokens` tokens.
    void turn(int n, std::size_t result_tokens)
    {
        const auto k = std::to_string(n);
        s.user("u" + k, "step " + k);
        s.tool_call("a" + k, "c" + k, "read", {{"path", "src/file" + k + ".ts"}});
        s.tool_result("r" + k, "c" + k, "read", agentctx::test::tokens(result_tokens));
    }

private:
    std::string path_;
    std::size_t written_ = 0;
};

json::object open_request(const std::string& path, json::object compaction, std::int64_t window = 200000)
{
    return {
        {"op", "open"},
        {"id", 1},
        {"session", path},
        {"contextWindow", window},
        {"settings", json::object{{"compaction", std::move(compaction)}}}};
}

std::string action(const json::object& a)
{
    return a.contains("action") ? std::string(a.at("action").as_string()) : json::serialize(a);
}

// Appends 2,000-token turns until a turn end answers more than `none` (at most up to turn `limit`).
json::object turns_until_action(advisor_process& p, pi_file& f, int& t, int limit)
{
    json::object a;
    while (action(a = p.ask({{"op", "turn_end"}})) == "none" && t < limit)
    {
        f.turn(++t, 2000);
        f.flush();
    }
    return a;
}

// Appends the advisor's context_edit drafts as Pi does (the entry id names the target).
void append_edits(pi_file& f, const json::array& edits)
{
    for (const auto& e : edits)
        f.s.entry(
            "context_edit",
            "e" + std::string(e.at("targetId").as_string()),
            {{"targetId", e.at("targetId")}, {"replacement", e.at("replacement")}}
        );
}

}  // namespace

// The file is read whole once; each turn end parses only the lines appended since.
TEST(advise_cli, reads_the_file_once_then_only_the_appended_lines)
{
    pi_file f("advise-tail");
    f.turn(1, 100);
    f.flush();
    advisor_process p;
    auto opened = p.ask(open_request(f.path(), {}));
    ASSERT_FALSE(opened.contains("error")) << json::serialize(opened);
    EXPECT_EQ(opened.at("id").as_int64(), 1);
    EXPECT_EQ(opened.at("entries").as_int64(), 3);
    for (int t = 2; t <= 4; ++t)
    {
        f.turn(t, 100);
        f.flush();
        EXPECT_EQ(action(p.ask({{"op", "turn_end"}})), "none");
    }
    const auto st = p.ask({{"op", "status"}});
    EXPECT_EQ(st.at("entries").as_int64(), 12);
    EXPECT_EQ(st.at("reads").at("wholeLoads").as_int64(), 1);
    EXPECT_EQ(st.at("reads").at("appendedLines").as_int64(), 9);
    EXPECT_EQ(st.at("reads").at("offset").as_int64(), static_cast<std::int64_t>(f.s.text.size()));
    EXPECT_GT(st.at("contextTokens").as_int64(), 400);
    EXPECT_EQ(p.finish(), 0);
}

// A line Pi has not finished writing waits for its newline; a file that does not exist yet is an
// empty session.
TEST(advise_cli, a_missing_file_is_empty_and_a_half_written_line_waits)
{
    pi_file f("advise-partial");
    advisor_process p;
    auto opened = p.ask(open_request(f.path(), {}));
    ASSERT_FALSE(opened.contains("error")) << json::serialize(opened);
    EXPECT_EQ(opened.at("entries").as_int64(), 0);
    f.turn(1, 100);
    f.flush();
    const auto half = f.s.text.size();
    f.turn(2, 100);
    {
        std::ofstream out(f.path(), std::ios::binary | std::ios::app);
        out << f.s.text.substr(half, f.s.text.size() - half - 10);
    }
    EXPECT_EQ(action(p.ask({{"op", "turn_end"}})), "none");
    EXPECT_EQ(p.ask({{"op", "status"}}).at("entries").as_int64(), 5);
    {
        std::ofstream out(f.path(), std::ios::binary | std::ios::app);
        out << f.s.text.substr(f.s.text.size() - 10);
    }
    EXPECT_EQ(p.ask({{"op", "status"}}).at("entries").as_int64(), 6);
}

// Over the clearing trigger, old tool results are replaced through Pi's context_edit drafts; the
// most recent ones stay. Once Pi appended them, nothing more is cleared.
TEST(advise_cli, clears_old_tool_results_as_context_edit_drafts)
{
    pi_file f("advise-clear");
    for (int t = 1; t <= 8; ++t)
        f.turn(t, 4000);
    f.flush();
    advisor_process p;
    ASSERT_FALSE(p.ask(open_request(
                           f.path(),
                           {{"workingBudget", 60000}, {"background", json::object{{"enabled", false}}}}
                       )
    ).contains("error"));
    const auto a = p.ask({{"op", "turn_end"}});
    ASSERT_EQ(action(a), "clear") << json::serialize(a);
    const auto& edits = a.at("edits").as_array();
    ASSERT_EQ(edits.size(), 5u);  // keep: the 3 most recent tool uses
    for (std::size_t i = 0; i < edits.size(); ++i)
    {
        const auto& e = edits[i].as_object();
        EXPECT_EQ(e.at("type").as_string(), "context_edit");
        EXPECT_EQ(e.at("targetId").as_string(), "r" + std::to_string(i + 1));
        const auto& text = e.at("replacement").at("content").as_array()[0].at("text").as_string();
        EXPECT_EQ(std::string(text).rfind("[Tool result cleared", 0), 0u) << text;
    }
    // Pi appends the drafts; the next turn end sees them and the smaller context.
    append_edits(f, edits);
    f.flush();
    const auto b = p.ask({{"op", "turn_end"}});
    EXPECT_EQ(action(b), "none") << json::serialize(b);
    EXPECT_LT(b.at("contextTokens").as_int64(), a.at("contextTokens").as_int64() - 15000);
}

// Past startAt × threshold a background summary is requested; the summary handed back is held and,
// at the turn that crosses the threshold, committed as a complete compaction draft with no model
// wait. The advisor never writes the file.
TEST(advise_cli, background_summary_is_committed_at_the_threshold_without_a_wait)
{
    pi_file f("advise-background");
    advisor_process p;
    const json::object settings{
        {"workingBudget", 30000},
        {"keepRecentTokens", 8000},
        {"clearToolResults", json::object{{"enabled", false}}},
        {"background", json::object{{"startAt", 0.5}}}};
    ASSERT_FALSE(p.ask(open_request(f.path(), settings)).contains("error"));
    int t = 0;
    json::object a = turns_until_action(p, f, t, 40);
    ASSERT_EQ(action(a), "summarize") << json::serialize(a);
    EXPECT_FALSE(a.at("foreground").as_bool());
    EXPECT_EQ(a.at("reason").as_string(), "background");
    EXPECT_GT(a.at("contextTokens").as_int64(), 15000);
    EXPECT_LE(a.at("contextTokens").as_int64(), 30000);
    EXPECT_NE(std::string(a.at("instructions").as_string()).find("## Goal"), std::string::npos);
    const std::string plan(a.at("planId").as_string());
    const std::string kept(a.at("firstKeptEntryId").as_string());
    EXPECT_EQ(kept[0], 'u');  // a whole turn is kept: never a tool result
    const auto held = p.ask(
        {{"op", "summary"},
         {"planId", plan},
         {"summary", "## Goal\nthe task"},
         {"usage", json::object{{"input", 10}, {"output", 5}}}}
    );
    EXPECT_EQ(held.at("prepared").as_string(), plan) << json::serialize(held);
    json::object c = turns_until_action(p, f, t, 60);
    ASSERT_EQ(action(c), "commit") << json::serialize(c);
    EXPECT_GT(c.at("contextTokens").as_int64(), 30000);
    const auto& d = c.at("compaction").as_object();
    EXPECT_EQ(d.at("type").as_string(), "compaction");
    EXPECT_EQ(d.at("firstKeptEntryId").as_string(), kept);
    EXPECT_EQ(std::string(d.at("summary").as_string()).rfind("## Goal\nthe task", 0), 0u);
    EXPECT_NE(std::string(d.at("summary").as_string()).find("<read-files>"), std::string::npos);
    EXPECT_FALSE(d.at("details").at("readFiles").as_array().empty());
    EXPECT_EQ(d.at("details").at("agentctx").at("reason").as_string(), "background");
    EXPECT_EQ(d.at("usage").at("output").as_int64(), 5);
    EXPECT_LT(c.at("tokensAfter").as_int64(), 30000);
    EXPECT_EQ(agentctx::test::read_text(f.path()), f.s.text);  // never written by the advisor
    // Pi appends the draft: the advisor's projection starts from it.
    f.s.compaction("cmp1", kept, std::string(d.at("summary").as_string()));
    f.flush();
    const auto after = p.ask({{"op", "turn_end"}});
    EXPECT_EQ(action(after), "none") << json::serialize(after);
    EXPECT_LT(after.at("contextTokens").as_int64(), 30000);
}

// With nothing prepared, the crossing turn asks for a foreground summary and the summary's answer
// is the draft itself.
TEST(advise_cli, foreground_summary_answers_with_the_draft)
{
    pi_file f("advise-foreground");
    advisor_process p;
    const json::object settings{
        {"workingBudget", 20000},
        {"keepRecentTokens", 5000},
        {"clearToolResults", json::object{{"enabled", false}}},
        {"background", json::object{{"enabled", false}}}};
    ASSERT_FALSE(p.ask(open_request(f.path(), settings)).contains("error"));
    int t = 0;
    json::object a = turns_until_action(p, f, t, 40);
    ASSERT_EQ(action(a), "summarize") << json::serialize(a);
    EXPECT_TRUE(a.at("foreground").as_bool());
    const auto c = p.ask({{"op", "summary"}, {"planId", a.at("planId")}, {"summary", "done so far"}});
    ASSERT_EQ(action(c), "commit") << json::serialize(c);
    EXPECT_EQ(c.at("compaction").at("firstKeptEntryId"), a.at("firstKeptEntryId"));
    EXPECT_EQ(c.at("compaction").at("details").at("agentctx").at("reason").as_string(), "threshold");
    // `/compact` goes through the same plan and prompt, with the user's focus.
    const auto m = p.ask({{"op", "compact"}, {"reason", "manual"}, {"customInstructions", "the parser"}});
    ASSERT_EQ(action(m), "summarize") << json::serialize(m);
    EXPECT_NE(std::string(m.at("instructions").as_string()).find("the parser"), std::string::npos);
}

// The threshold is crossed while the background summary still runs: the turn end is told to wait,
// and the summary's own answer is then the draft.
TEST(advise_cli, a_running_summary_at_the_threshold_is_awaited)
{
    pi_file f("advise-wait");
    advisor_process p;
    const json::object settings{
        {"workingBudget", 30000},
        {"keepRecentTokens", 8000},
        {"clearToolResults", json::object{{"enabled", false}}},
        {"background", json::object{{"startAt", 0.5}}}};
    ASSERT_FALSE(p.ask(open_request(f.path(), settings)).contains("error"));
    int t = 0;
    json::object a = turns_until_action(p, f, t, 40);
    ASSERT_EQ(action(a), "summarize");
    json::object w = turns_until_action(p, f, t, 60);
    ASSERT_EQ(action(w), "wait") << json::serialize(w);
    EXPECT_EQ(w.at("planId"), a.at("planId"));
    const auto c = p.ask({{"op", "summary"}, {"planId", a.at("planId")}, {"summary", "## Goal\nx"}});
    ASSERT_EQ(action(c), "commit") << json::serialize(c);
    EXPECT_EQ(c.at("compaction").at("firstKeptEntryId"), a.at("firstKeptEntryId"));
}

// A cut that keeps a metadata entry just before its first message (here a thinking-level change
// before each prompt) still names where the kept part begins among the request's messages.
TEST(advise_cli, a_cut_on_a_metadata_entry_is_placed_among_the_messages)
{
    pi_file f("advise-metadata-cut");
    for (int t = 1; t <= 12; ++t)
    {
        f.s.entry("thinking_level_change", "tl" + std::to_string(t), {{"thinkingLevel", "off"}});
        f.turn(t, 2000);
    }
    f.flush();
    advisor_process p;
    const json::object settings{
        {"keepRecentTokens", 4000}, {"clearToolResults", json::object{{"enabled", false}}}};
    ASSERT_FALSE(p.ask(open_request(f.path(), settings)).contains("error"));
    const auto a = p.ask({{"op", "compact"}, {"reason", "manual"}});
    ASSERT_EQ(action(a), "summarize") << json::serialize(a);
    EXPECT_EQ(std::string(a.at("firstKeptEntryId").as_string()).substr(0, 2), "tl");
    const auto kept = a.at("scope").at("kept").as_int64();
    EXPECT_GT(kept, a.at("scope").at("first").as_int64());
    // The kept part's first message is the prompt after that entry.
    const std::string tl(a.at("firstKeptEntryId").as_string());
    const auto quoted = std::string(a.at("instructions").as_string());
    EXPECT_NE(quoted.find("step " + tl.substr(2)), std::string::npos) << quoted.substr(0, 600);
}

// A prepared summary whose covered history changed (a compaction appended meanwhile) is dropped.
TEST(advise_cli, a_stale_plan_is_discarded)
{
    pi_file f("advise-stale");
    advisor_process p;
    const json::object settings{
        {"workingBudget", 30000},
        {"keepRecentTokens", 8000},
        {"clearToolResults", json::object{{"enabled", false}}},
        {"background", json::object{{"startAt", 0.5}}}};
    ASSERT_FALSE(p.ask(open_request(f.path(), settings)).contains("error"));
    int t = 0;
    json::object a = turns_until_action(p, f, t, 40);
    ASSERT_EQ(action(a), "summarize");
    f.s.compaction("pi-own", std::string(a.at("firstKeptEntryId").as_string()), "Pi's own summary");
    f.flush();
    const auto b = p.ask({{"op", "turn_end"}});
    ASSERT_TRUE(b.contains("discarded")) << json::serialize(b);
    EXPECT_EQ(b.at("discarded").at("reason").as_string(), "restored");
    EXPECT_EQ(
        p.ask({{"op", "summary"}, {"planId", a.at("planId")}, {"summary", "late"}})
            .at("error")
            .at("code")
            .as_string(),
        "unknown_plan"
    );
}

// With the model's cache prices, a clearing waits until the reads its results already cost reach
// the rewrite of the tail it breaks; the deferral says what was weighed.
TEST(advise_cli, with_cache_prices_a_clearing_waits_until_it_pays)
{
    pi_file f("advise-priced");
    advisor_process p;
    auto open = open_request(
        f.path(),
        {{"workingBudget", 100000},
         {"background", json::object{{"enabled", false}}},
         {"clearToolResults", json::object{{"trigger", 1000}, {"clearAtLeast", 1000}}}}
    );
    open["cachePrices"] = json::object{{"write", 1.25}, {"read", 0.1}};
    ASSERT_FALSE(p.ask(open).contains("error"));
    int t = 0;
    json::object a;
    std::vector<json::object> deferred;
    while (action(a = p.ask({{"op", "turn_end"}})) == "none" && t < 40)
    {
        if (a.contains("deferred"))
            deferred.push_back(a.at("deferred").as_object());
        f.turn(++t, 2000);
        f.flush();
    }
    ASSERT_EQ(action(a), "clear") << json::serialize(a);
    ASSERT_FALSE(deferred.empty());  // without prices the first clearable result clears at once
    for (const auto& d : deferred)
        EXPECT_LT(d.at("readsPaid").to_number<double>(), d.at("rewrite").to_number<double>())
            << json::serialize(d);
    EXPECT_GT(deferred.front().at("tailTokens").as_int64(), 4000);  // the 2 kept results already sent
    EXPECT_GE(a.at("results").as_int64(), 2);
}

// A clearing proposed with a compaction breaks no cached prefix (the request after it writes the
// context anew): the commit carries the kept part's clearing edits after its draft, decided on the
// turn end's context (over the trigger) though the compacted one is under it.
TEST(advise_cli, a_commit_carries_the_clearing_of_its_kept_part)
{
    pi_file f("advise-commit-clear");
    advisor_process p;
    auto open = open_request(
        f.path(),
        {{"workingBudget", 30000},
         {"keepRecentTokens", 8000},
         {"background", json::object{{"startAt", 0.5}}},
         {"clearToolResults", json::object{{"trigger", 0.9}, {"keep", 1}, {"clearAtLeast", 1000}}}}
    );
    open["cachePrices"] = json::object{{"write", 1000}, {"read", 0.1}};  // no clearing ever pays alone
    ASSERT_FALSE(p.ask(open).contains("error"));
    int t = 0;
    json::object a = turns_until_action(p, f, t, 40);
    ASSERT_EQ(action(a), "summarize") << json::serialize(a);
    const std::string kept(a.at("firstKeptEntryId").as_string());
    ASSERT_EQ(
        action(p.ask({{"op", "summary"}, {"planId", a.at("planId")}, {"summary", "## Goal\nx"}})), "none"
    );
    json::object c = turns_until_action(p, f, t, 60);
    ASSERT_EQ(action(c), "commit") << json::serialize(c);
    ASSERT_TRUE(c.contains("edits")) << json::serialize(c);
    const auto& edits = c.at("edits").as_array();
    const int first_kept = std::stoi(kept.substr(1));
    EXPECT_EQ(static_cast<int>(edits.size()), t - first_kept);  // every kept result but the newest
    for (const auto& e : edits)
    {
        const std::string target(e.at("targetId").as_string());
        EXPECT_EQ(target[0], 'r');
        EXPECT_GE(std::stoi(target.substr(1)), first_kept);
        EXPECT_LT(std::stoi(target.substr(1)), t);
    }
    const auto summarized = c.at("compaction").at("details").at("agentctx").at("tokensAfter").as_int64();
    EXPECT_LT(summarized, 27000);  // the compacted context alone is under the trigger
    EXPECT_EQ(c.at("tokensAfter").as_int64(), summarized - c.at("tokensFreed").as_int64());
    // Pi appends the draft then the edits: the context is what the commit announced.
    f.s.compaction("cmp1", kept, std::string(c.at("compaction").at("summary").as_string()));
    append_edits(f, edits);
    f.flush();
    const auto after = p.ask({{"op", "status"}});
    EXPECT_NEAR(after.at("contextTokens").as_int64(), c.at("tokensAfter").as_int64(), 200);
    // Through Pi's compaction hook the compaction is appended alone: no edits ride along.
    for (int i = 0; i < 6; ++i)
        f.turn(++t, 2000);
    f.flush();
    const auto m = p.ask({{"op", "compact"}, {"reason", "manual"}});
    ASSERT_EQ(action(m), "summarize") << json::serialize(m);
    const auto mc = p.ask({{"op", "summary"}, {"planId", m.at("planId")}, {"summary", "## Goal\ny"}});
    ASSERT_EQ(action(mc), "commit") << json::serialize(mc);
    EXPECT_FALSE(mc.contains("edits")) << json::serialize(mc);
}

// Every bad line gets a named error answer and the advisor keeps serving.
TEST(advise_cli, bad_lines_get_named_errors_and_the_advisor_keeps_serving)
{
    pi_file f("advise-bad");
    f.turn(1, 10);
    f.flush();
    advisor_process p;
    const auto code = [&](const std::string& line) {
        const auto v = p.ask_raw(line);
        return v.is_object() && v.as_object().contains("error")
                   ? std::string(v.at("error").at("code").as_string())
                   : json::serialize(v);
    };
    EXPECT_EQ(code("not json"), "bad_json");
    EXPECT_EQ(code("[1,2]"), "bad_json");
    EXPECT_EQ(code("{}"), "bad_request");
    EXPECT_EQ(code(R"({"op":"dance"})"), "unknown_op");
    EXPECT_EQ(code(R"({"op":"turn_end"})"), "not_open");
    EXPECT_EQ(code(R"({"op":"open"})"), "bad_request");
    EXPECT_EQ(code(R"({"op":"open","session":"x.jsonl","contextWindow":-5})"), "bad_request");
    EXPECT_EQ(code(json::serialize(open_request(f.path(), {{"reserveTokens", -1}}))), "invalid_settings");
    EXPECT_EQ(
        code(json::serialize(open_request(f.path(), {{"background", json::object{{"startAt", 7}}}}))),
        "invalid_settings"
    );
    for (const auto* prices :
         {R"("cheap")", R"({"write":1.25})", R"({"write":0.1,"read":0.1})", R"({"write":1,"read":-1})"})
    {
        auto bad = json::serialize(open_request(f.path(), {}));
        bad.insert(bad.size() - 1, std::string(R"(,"cachePrices":)") + prices);
        EXPECT_EQ(code(bad), "bad_request") << bad;
    }
    EXPECT_FALSE(p.ask(open_request(f.path(), {})).contains("error"));
    EXPECT_EQ(code(R"({"op":"summary","planId":"p9","summary":"x"})"), "unknown_plan");
    EXPECT_EQ(code(R"({"op":"summary","summary":"x"})"), "bad_request");
    EXPECT_EQ(code(R"({"op":"failed","planId":"p9"})"), "unknown_plan");
    EXPECT_EQ(code(R"({"op":"status","id":"k"})").substr(0, 1), "{");  // no error: still serving
    {
        std::ofstream out(f.path(), std::ios::binary | std::ios::app);
        out << "{\"type\":\"message\",\"id\":\"zz\",\"parentId\":\"missing\"}\n";
    }
    EXPECT_EQ(code(R"({"op":"turn_end"})"), "session_invalid");
    EXPECT_EQ(action(p.ask({{"op", "shutdown"}})), "none");
    EXPECT_EQ(p.finish(), 0);
}

TEST(advise_cli, needs_stdio)
{
    EXPECT_EQ(std::system((cli + " advise >/dev/null 2>&1").c_str()) >> 8, 2);
    EXPECT_EQ(std::system((cli + " advise --stdio </dev/null").c_str()) >> 8, 0);
}
