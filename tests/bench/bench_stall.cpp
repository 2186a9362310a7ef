// How long the agent waits for compaction: a scripted session through the runtime against the loopback
// provider with a slow summary, foreground against background (portable, and native: OpenAI inline compaction
// in the background); stall per compaction and summary calls.
//   bench_stall [TURNS=200] [SUMMARY_MS=2000] [TURN_MS=600] [START_AT=0.7]
// TURN_MS is the agent's own time per turn (its model call), during which a background summary runs.
#include <agentctx/providers/http_summarizer.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "fake_provider_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using namespace agentctx;
using std::chrono::steady_clock;

namespace {

struct params
{
    std::size_t turns = 200;
    int summary_ms = 2000;
    int turn_ms = 600;
    double start_at = 0.7;  ///< compaction.background.startAt
};

struct run_result
{
    std::vector<double> stalls_ms;  ///< the turn-end wait of each turn that committed a compaction
    double worst_turn_end_ms = 0;   ///< over every turn, compacting or not
    std::size_t summary_calls = 0;
    double wall_s = 0;
};

double ms_since(steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(steady_clock::now() - t0).count();
}

// Nearest rank.
double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// Turn i: a user prompt and an answer of about 5,000 tokens together (chars/4), no usage: the
// session measures its projected context.
json::object user_entry(std::size_t i, double ts)
{
    return {
        {"type", "message"},
        {"message",
         json::object{
             {"role", "user"},
             {"content", "turn " + std::to_string(i) + " " + std::string(2000, 'q')},
             {"timestamp", ts}}}};
}

json::object assistant_message(std::size_t i, double ts)
{
    return {
        {"role", "assistant"},
        {"content",
         json::array{json::object{
             {"type", "text"}, {"text", "answer " + std::to_string(i) + " " + std::string(18000, 'a')}}}},
        {"api", "openai-completions"},
        {"provider", "openai"},
        {"model", "bench"},
        {"stopReason", "stop"},
        {"timestamp", ts}};
}

// Built outside the coroutine: g++ 12 miscompiles braced lists of string literals inside one.
json::object message_entry(const json::object& m)
{
    return {{"type", "message"}, {"message", m}};
}

asio::awaitable<void> drive(std::shared_ptr<runtime::session> s, params p, run_result& out)
{
    asio::steady_timer agent(co_await asio::this_coro::executor);
    const auto t0 = steady_clock::now();
    // Timestamps from now on: a message older than the latest compaction is never checked.
    double ts = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()
    )
                                        .count());
    for (std::size_t i = 0; i < p.turns; ++i)
    {
        ts += 1000;
        co_await s->async_append(user_entry(i, ts), asio::use_awaitable);
        agent.expires_after(std::chrono::milliseconds(p.turn_ms));  // the agent's model call
        co_await agent.async_wait(asio::use_awaitable);
        ts += 1000;
        const auto m = assistant_message(i, ts);
        co_await s->async_append(message_entry(m), asio::use_awaitable);
        compaction::diagnostics diag;
        auto msg = compaction::decode_message(m, "", diag).value();
        const auto waited = steady_clock::now();
        auto [ec, outcome] =
            co_await s->async_on_turn_end(std::move(msg), asio::as_tuple(asio::use_awaitable));
        const double ms = ms_since(waited);
        out.worst_turn_end_ms = std::max(out.worst_turn_end_ms, ms);
        if (!ec && outcome.compacted)
            out.stalls_ms.push_back(ms);
        else if (ec)
            std::fprintf(stderr, "turn %zu: %s %s\n", i, ec.message().c_str(), outcome.message.c_str());
    }
    out.wall_s = ms_since(t0) / 1000.0;
    s->close();
}

enum class mode
{
    foreground,
    background,
    native_background,  ///< background preparation through OpenAI inline compaction
};

run_result run(mode m, const params& p, const fs::path& dir)
{
    const bool background = m != mode::foreground;
    test::fake_provider_server server;
    server.set_default(
        {.body = test::openai_body("## Goal\nstall benchmark summary\n\n## Progress\n- done"),
         .delay = std::chrono::milliseconds(p.summary_ms)}
    );
    // The exact-count preflight is answered at once (not found: the session estimates instead),
    // so only summary requests carry the latency.
    server.route("/input_tokens", [](const test::recorded_request&) {
        return test::scripted_response{.status = 404, .body = "{}"};
    });
    // Native: the inline request (`/responses` with the trigger) takes the same latency.
    server.route("/v1/responses", [delay = p.summary_ms](const test::recorded_request& r) {
        auto reply = test::openai_inline_reply(r, "ENC-bench");
        reply.delay = std::chrono::milliseconds(delay);
        return reply;
    });
    asio::io_context ioc(1);
    providers::provider_config pc;
    if (m == mode::native_background)
    {
        pc.native = providers::native_mode::on;
        pc.openai_form = providers::openai_native_form::inline_request;
    }
    pc.base_url = server.base_url() + "/v1";
    pc.model = "bench";
    pc.api_key = "k";
    auto logger = std::make_shared<spdlog::logger>("bench");  // no sinks
    runtime::session_config config;
    // The default settings: threshold 183,616 tokens (200,000 − 16,384); at startAt 0.7 a background
    // compaction starts above 128,531, eleven turns before the threshold.
    config.settings.working_budget =
        compaction::token_amount{};  // Pi's threshold: the stall, not the budget, is measured
    config.settings.background.enabled = background;
    config.settings.background.start_at = p.start_at;
    config.model = {.provider = "openai", .model_id = "bench", .context_window = 200000};
    config.summarizer = std::make_shared<providers::http_summarizer>(ioc.get_executor(), pc, logger);
    config.logger = logger;

    const fs::path file = dir / (m == mode::foreground   ? "foreground.jsonl"
                                 : m == mode::background ? "background.jsonl"
                                                         : "native.jsonl");
    std::ofstream(file, std::ios::binary)
        << R"({"type":"session","version":3,"id":"bench","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/"})"
        << '\n';
    compaction::diagnostics diag;
    auto store = runtime::jsonl_store::open(file, {}, diag);
    auto s = store ? runtime::session::open(ioc.get_executor(), std::move(*store), config, diag)
                   : compaction::result<std::shared_ptr<runtime::session>>(store.error());
    if (!s)
    {
        std::fprintf(stderr, "open: %s\n", diag.message.c_str());
        std::exit(1);
    }
    run_result out;
    asio::co_spawn(ioc, drive(*s, p, out), [](std::exception_ptr e) {
        if (e)
            std::rethrow_exception(e);
    });
    ioc.run();
    for (const auto& r : server.requests())
        out.summary_calls +=
            r.target.ends_with("/chat/completions") || r.target.ends_with("/responses") ? 1 : 0;
    return out;
}

void print(const char* mode, const run_result& r)
{
    std::printf(
        "%-11s %11zu %13zu %12.1f %12.1f %12.1f %16.1f %8.1f\n",
        mode,
        r.stalls_ms.size(),
        r.summary_calls,
        percentile(r.stalls_ms, 0.50),
        percentile(r.stalls_ms, 0.95),
        percentile(r.stalls_ms, 1.0),
        r.worst_turn_end_ms,
        r.wall_s
    );
}

}  // namespace

int main(int argc, char** argv)
{
    params p;
    if (argc > 1)
        p.turns = std::strtoull(argv[1], nullptr, 10);
    if (argc > 2)
        p.summary_ms = std::atoi(argv[2]);
    if (argc > 3)
        p.turn_ms = std::atoi(argv[3]);
    if (argc > 4)
        p.start_at = std::atof(argv[4]);
    const fs::path dir = fs::temp_directory_path() / ("agentctx-bench-stall-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::printf(
        "turns %zu, summary latency %d ms, agent time per turn %d ms, startAt %.2f\n",
        p.turns,
        p.summary_ms,
        p.turn_ms,
        p.start_at
    );
    std::printf(
        "%-11s %11s %13s %12s %12s %12s %16s %8s\n",
        "mode",
        "compactions",
        "summary_calls",
        "stall_p50_ms",
        "stall_p95_ms",
        "stall_max_ms",
        "turn_end_max_ms",
        "wall_s"
    );
    print("foreground", run(mode::foreground, p, dir));
    print("background", run(mode::background, p, dir));
    print("native-bg", run(mode::native_background, p, dir));
    fs::remove_all(dir);
    return 0;
}
