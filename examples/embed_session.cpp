// The README's embedding example, compiled: an agent loop that keeps its context compacted.
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <memory>

namespace asio = boost::asio;
using namespace agentctx;

// One turn of an agent loop: persist the prompt, call the model, persist its answer, then let
// agentctx decide whether to compact before the next request.
// The messages of one turn (plain functions: g++ 12 miscompiles braced lists inside coroutines).
boost::json::object user_entry(const std::string& text)
{
    return {{"type", "message"}, {"message", {{"role", "user"}, {"content", text}, {"timestamp", 1}}}};
}

boost::json::object model_answer()  // stands in for the model's reply
{
    return {{"role", "assistant"}, {"content", boost::json::array{{{"type", "text"}, {"text", "Done."}}}},
            {"provider", "openai"}, {"model", "gpt-4.1"}, {"stopReason", "stop"}, {"timestamp", 2},
            {"usage", {{"input", 190000}, {"output", 50}, {"totalTokens", 190050}}}};
}

// One turn of an agent loop: persist the prompt, call the model, persist its answer, then let
// agentctx decide whether to compact before the next request.
asio::awaitable<void> turn(std::shared_ptr<runtime::session> s, std::string prompt)
{
    co_await s->async_append(user_entry(prompt), asio::use_awaitable);
    auto context = s->context();  // what the request carries: summary + recent suffix
    auto answer = model_answer();  // ... send `context` to the model
    boost::json::object entry;
    entry["type"] = "message";
    entry["message"] = answer;
    co_await s->async_append(std::move(entry), asio::use_awaitable);
    compaction::diagnostics diag;
    auto last = compaction::decode_message(answer, "", diag).value();
    auto outcome = co_await s->async_on_turn_end(std::move(last), asio::use_awaitable);
    std::printf("context %zu messages, compacted: %s\n", context.size(), outcome.compacted ? "yes" : "no");
}

int main(int argc, char** argv)
{
    if (argc < 2)
    {
        std::fprintf(stderr, "usage: embed_session NEW.jsonl\n");
        return 2;
    }
    asio::io_context ioc;
    compaction::diagnostics diag;
    auto header = compaction::make_header("demo", compaction::iso_timestamp_now(), "/tmp");
    auto store = runtime::jsonl_store::create(argv[1], header, {}, diag);
    if (!store)
        return std::fprintf(stderr, "%s\n", diag.message.c_str()), 1;
    runtime::session_config config;
    config.model = {"openai", "gpt-4.1", 200000, 32768};
    // config.summarizer = a providers::summarizer (HTTP provider or the offline one)
    auto s = runtime::session::open(ioc.get_executor(), std::move(*store), config, diag).value();
    asio::co_spawn(ioc, turn(s, "Fix the failing test"), asio::detached);
    ioc.run();
}
