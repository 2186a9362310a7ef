// soak_child: the process the crash-injection soak (tests/runtime/crash_soak_test.cpp) kills.
//
// usage: soak_child FILE ACK_FD FIRST_SEQ SEED COMPACT_EVERY [background]
//        soak_child --create DIR ACK_FD
//
// The second form creates DIR/c0.jsonl, DIR/c1.jsonl, ... with jsonl_store::create, one after
// the other, and acknowledges each ("A <n>") once create returned (after an "R" line).
//
// Opens the existing session FILE (jsonl_store, default fsync policy, strict load), then appends
// turns forever: a user message, and an assistant reply or an assistant tool call plus its tool
// result. Every message's first text block starts with "seq=<n> " (n counts up from FIRST_SEQ).
// Every COMPACT_EVERY appends it runs a manual compaction with the offline summarizer. With
// `background`, the window is small and every reply is followed by the turn-end check: background
// compactions start, are held and commit at the threshold (acknowledged with "K" too), between
// the manual ones, which supersede them. It never exits on its own: the parent SIGKILLs it.
//
// Progress goes to ACK_FD as short lines, each one write(2) (atomic on a pipe), so the parent
// has every line written before the kill:
//   R <torn> <nl>    opened; torn = 1 if the load reported a torn tail, nl = 1 if a final newline was missing
//   A <seq> <id>     an append completed (acknowledged)
//   S                a compaction started (compaction_start event)
//   C <id>           the compaction entry is about to be written (store append + fdatasync)
//   D <id>           that store append returned: the line is written and synced
//   K <id>           the compaction completed and committed (acknowledged)
//   B                a background compaction committed (its compaction_end event)
//   E <code>         a manual compaction declined (nothing_to_compact, already_compacted)
// Any other failure prints to stderr and exits with a non-zero status.
#include <agentctx/compaction/error.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <unistd.h>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace agentctx;

namespace {

int ack_fd = -1;

void send(const std::string& line)
{
    const std::string l = line + "\n";
    for (;;)
    {
        const ssize_t n = ::write(ack_fd, l.data(), l.size());
        if (n == static_cast<ssize_t>(l.size()))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        std::fprintf(stderr, "soak_child: cannot write to the ack descriptor\n");
        std::_Exit(6);
    }
}

[[noreturn]] void die(const std::string& what)
{
    std::fprintf(stderr, "soak_child: %s\n", what.c_str());
    std::_Exit(5);
}

// Reports the compaction commit window to the parent: before and after the store append of a
// compaction entry. A decorator over the real store; the library has no test hooks.
class marking_store final : public runtime::store
{
public:
    explicit marking_store(std::unique_ptr<runtime::store> inner) : inner_(std::move(inner)) {}

    compaction::result<void> write_header(const compaction::session_header& h, compaction::diagnostics& diag)
        override
    {
        return inner_->write_header(h, diag);
    }
    compaction::result<void> append(const compaction::entry& e, compaction::diagnostics& diag) override
    {
        const bool mark = e.type == compaction::entry_type::compaction;
        if (mark)
            send("C " + e.id);
        auto r = inner_->append(e, diag);
        if (mark && r)
            send("D " + e.id);
        return r;
    }
    // Batches (tool-result clearing) go through the real store's one-write batch: the default
    // would append them one by one, which is not what a session over a jsonl_store does.
    compaction::result<void> append_all(
        const std::vector<compaction::entry_ptr>& entries, compaction::diagnostics& diag
    ) override
    {
        const auto it = std::find_if(entries.begin(), entries.end(), [](const auto& e) {
            return e->type == compaction::entry_type::compaction;
        });
        if (it != entries.end())
            send("C " + (*it)->id);
        auto r = inner_->append_all(entries, diag);
        if (it != entries.end() && r)
            send("D " + (*it)->id);
        return r;
    }
    compaction::result<compaction::session_log> load(
        const compaction::load_options& opts, compaction::load_report& report, compaction::diagnostics& diag
    ) override
    {
        return inner_->load(opts, report, diag);
    }

private:
    std::unique_ptr<runtime::store> inner_;
};

bool background = false;
double message_time = 1768467700000;

json::object message(json::object m)
{
    // Background mode: times from now on, since a turn-end check skips a message older than the
    // latest compaction.
    if (background)
        message_time = std::max(
            message_time + 1,
            static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch()
            )
                                    .count())
        );
    m["timestamp"] = message_time;
    return {{"type", "message"}, {"message", std::move(m)}};
}

json::array text_block(const std::string& text)
{
    return {json::object{{"type", "text"}, {"text", text}}};
}

json::object assistant(json::array content, const char* stop)
{
    return message(
        {{"role", "assistant"},
         {"content", std::move(content)},
         {"api", "anthropic-messages"},
         {"provider", "anthropic"},
         {"model", "claude-sonnet-4-5"},
         {"stopReason", stop}}
    );
}

// Filler of varied length; now and then a large tool output, whose write(2) spans many pages
// (the kernel may stop a write between pages when a fatal signal is pending: a torn line).
std::string filler(std::mt19937_64& rng, bool tool)
{
    static const char* const words[] = {
        "parse",
        "the",
        "store",
        "file",
        "compaction",
        "summary",
        "lock",
        "append",
        "line",
        "check",
        "torn",
        "tail",
        "repair",
        "sync",
        "entry",
        "id"};
    std::size_t n = std::uniform_int_distribution<std::size_t>(4, 60)(rng);
    if (tool && rng() % 24 == 0)
        n = std::uniform_int_distribution<std::size_t>(2000, 10000)(rng);  // 10-60 KB
    std::string out;
    for (std::size_t i = 0; i < n; ++i)
    {
        out += words[rng() % 16];
        out += ' ';
    }
    return out;
}

asio::awaitable<void> run(
    std::shared_ptr<runtime::session> s, std::uint64_t seq, std::uint64_t seed, std::uint64_t every
)
{
    std::mt19937_64 rng(seed);
    std::uint64_t appends = 0;
    auto append = [&](json::object fields) -> asio::awaitable<void> {
        const std::uint64_t n = seq++;
        auto [ec, id] = co_await s->async_append(std::move(fields), asio::as_tuple(asio::use_awaitable));
        if (ec)
            die("append of seq " + std::to_string(n) + " failed: " + ec.message());
        send("A " + std::to_string(n) + " " + id);
        if (++appends % every != 0)
            co_return;
        auto [cec, out] = co_await s->async_compact(std::nullopt, asio::as_tuple(asio::use_awaitable));
        if (cec == make_error_code(compaction::errc::nothing_to_compact) ||
            cec == make_error_code(compaction::errc::already_compacted))
        {
            send("E " + cec.message());
            co_return;
        }
        if (cec || !out.compacted)
            die("compaction failed: " + cec.message() + ": " + out.message);
        send("K " + out.entry_id);
    };
    auto tag = [&](std::uint64_t n) { return "seq=" + std::to_string(n) + " "; };
    // (Each message is built before its co_await: GCC 12 rejects braced initializers with string
    // literals inside a co_await expression, "array used as initializer".)
    for (std::uint64_t turn = 0;; ++turn)
    {
        json::object user = message({{"role", "user"}, {"content", tag(seq) + filler(rng, false)}});
        co_await append(std::move(user));
        if (rng() % 3 == 0)
        {
            const std::string call = "call" + std::to_string(seq);
            json::array content = text_block(tag(seq) + "reading a file");
            content.push_back(json::object{
                {"type", "toolCall"},
                {"id", call},
                {"name", "read"},
                {"arguments", json::object{{"path", "src/f" + std::to_string(turn % 50) + ".cpp"}}}});
            json::object calling = assistant(std::move(content), "toolUse");
            co_await append(std::move(calling));
            json::object result = message(
                {{"role", "toolResult"},
                 {"toolCallId", call},
                 {"toolName", "read"},
                 {"content", text_block(tag(seq) + filler(rng, true))},
                 {"isError", false}}
            );
            co_await append(std::move(result));
        }
        json::object reply = assistant(text_block(tag(seq) + filler(rng, false)), "stop");
        compaction::diagnostics diag;
        auto last = compaction::decode_message(reply.at("message").as_object(), "", diag);
        co_await append(std::move(reply));
        if (!last)
            continue;  // the check after each reply: background compaction, or tool-result clearing
        auto [tec, out] =
            co_await s->async_on_turn_end(std::move(*last), asio::as_tuple(asio::use_awaitable));
        if (!tec && out.compacted)
            send("K " + out.entry_id);
    }
}

}  // namespace

int create_loop(const std::string& dir)
{
    for (std::uint64_t n = 0;; ++n)
    {
        compaction::diagnostics diag;
        const auto path = dir + "/c" + std::to_string(n) + ".jsonl";
        // fsync never: a fast loop, so more kills land inside create.
        auto st = runtime::jsonl_store::create(
            path,
            compaction::make_header("c" + std::to_string(n), "2026-01-15T09:00:00.000Z", "/"),
            {.fsync = runtime::fsync_policy::never},
            diag
        );
        if (!st)
            die("create " + path + ": " + st.error().message() + ": " + diag.message);
        st->reset();
        send("A " + std::to_string(n));
    }
}

int main(int argc, char** argv)
{
    if (argc == 4 && std::string(argv[1]) == "--create")
    {
        ack_fd = std::atoi(argv[3]);
        send("R");
        return create_loop(argv[2]);
    }
    if (argc != 6 && !(argc == 7 && std::string(argv[6]) == "background"))
    {
        std::fprintf(stderr, "usage: soak_child FILE ACK_FD FIRST_SEQ SEED COMPACT_EVERY [background]\n");
        return 2;
    }
    background = argc == 7;
    const std::string path = argv[1];
    ack_fd = std::atoi(argv[2]);
    const std::uint64_t first_seq = std::strtoull(argv[3], nullptr, 10);
    const std::uint64_t seed = std::strtoull(argv[4], nullptr, 10);
    std::uint64_t every = std::max<std::uint64_t>(1, std::strtoull(argv[5], nullptr, 10));
    if (background)
        every *= 8;  // manual compactions rarer: the context reaches the background start point
    spdlog::set_level(spdlog::level::warn);  // no info line per compaction

    asio::io_context ioc;
    compaction::diagnostics diag;
    auto st = runtime::jsonl_store::open(path, {}, diag);
    if (!st)
        die("open: " + st.error().message() + ": " + diag.message);
    runtime::session_config config;
    config.settings.keep_recent_tokens = 120;  // small: every compaction has something to summarize
    config.model = {"anthropic", "claude-sonnet-4-5", background ? 8000 : 200000, 0};
    if (background)
    {
        config.settings.reserve_tokens = 1000;  // threshold 7,000; background from 4,900
        config.progress_in_session = false;  // a large prefix goes piecewise: no progress entries in the file
        config.settings.clear_tool_results.enabled = false;  // the context must grow to the background start
    }
    else
    {
        // Tool-result clearing early and often: batches of context edits are written between kills.
        // Low enough for the small contexts between the frequent compactions; each cleared result
        // also clears its call's input, so every clearing is a batch of two edits or more.
        config.settings.clear_tool_results.trigger = {150, 0};
        config.settings.clear_tool_results.keep = 0;
        config.settings.clear_tool_results.clear_at_least = 20;
        config.settings.clear_tool_results.clear_all_inputs = true;
    }
    config.summarizer = std::make_shared<providers::offline_summarizer>(ioc.get_executor());
    compaction::load_report report;
    auto s = runtime::session::open(
        ioc.get_executor(), std::make_unique<marking_store>(std::move(*st)), config, diag, &report
    );
    if (!s)
        die("session open: " + s.error().message() + ": " + diag.message);
    (*s)->on_event([](const runtime::session_event& e) {
        if (std::holds_alternative<runtime::compaction_start_event>(e))
            send("S");
        const auto* end = std::get_if<runtime::compaction_end_event>(&e);
        if (end && end->result && end->reason == runtime::compaction_reason::background)
            send("B");
    });
    send(std::string("R ") + (report.torn ? "1" : "0") + " " + (report.missing_final_newline ? "1" : "0"));
    asio::co_spawn(ioc, run(*s, first_seq, seed, every), [](std::exception_ptr e) {
        if (!e)
            return;
        try
        {
            std::rethrow_exception(e);
        }
        catch (const std::exception& ex)
        {
            die(std::string("exception: ") + ex.what());
        }
    });
    ioc.run();
    return 0;
}
