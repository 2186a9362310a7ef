// The README's embedding example, run by the test suite: an agent loop that keeps its context compacted.
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/entries.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace agentctx;

// Stands in for the model: `input` is the prompt size the provider reported.
runtime::entries::assistant_reply call_model(
    const std::vector<compaction::context_message>& context, std::int64_t input
)
{
    runtime::entries::assistant_reply reply;
    reply.text =
        "Done with " + std::to_string(context.size()) + " messages of context. " + std::string(4000, 'x');
    reply.provider = "openai";
    reply.model = "gpt-4.1";
    reply.input_tokens = input;
    reply.output_tokens = 1000;
    return reply;
}

// One turn of an agent loop: persist the prompt, call the model, persist its answer, then let
// agentctx decide whether to compact before the next request.
asio::awaitable<void> turn(std::shared_ptr<runtime::session> s, std::string prompt, std::int64_t input)
{
    co_await s->async_append(runtime::entries::user(prompt), asio::use_awaitable);  // durable when it returns
    auto context = s->context();  // what the request carries: summary + recent suffix
    auto reply = call_model(context, input);
    co_await s->async_append(runtime::entries::assistant(reply), asio::use_awaitable);
    // Threshold check (fresh usage only) or one overflow compact-and-retry; may compact now.
    auto outcome = co_await s->async_on_turn_end(asio::use_awaitable);
    std::printf(
        "turn with %zu messages in context, compacted: %s\n", context.size(), outcome.compacted ? "yes" : "no"
    );
}

asio::awaitable<void> agent_loop(std::shared_ptr<runtime::session> s)
{
    for (int i = 1; i <= 6; ++i)  // the provider reports a growing prompt: 40k, 80k, ... tokens
        co_await turn(s, "Step " + std::to_string(i) + " of the task", 40000 * i);
    s->close();
}

int main(int argc, char** argv)
{
    if (argc < 2)
        return std::fprintf(stderr, "usage: embed_session NEW.jsonl\n"), 2;
    asio::io_context ioc;
    compaction::diagnostics diag;
    auto header = compaction::make_header("demo", compaction::iso_timestamp_now(), "/tmp");
    auto store = runtime::jsonl_store::create(argv[1], header, {}, diag);
    if (!store)
        return std::fprintf(stderr, "%s\n", diag.message.c_str()), 1;
    runtime::session_config config;
    config.model = {"openai", "gpt-4.1", 200000, 32768};  // provider, model, window, max output
    config.settings.keep_recent_tokens = 2000;
    config.summarizer =
        std::make_shared<providers::offline_summarizer>(ioc.get_executor());  // or an HTTP one
    auto s = runtime::session::open(ioc.get_executor(), std::move(*store), config, diag).value();
    asio::co_spawn(ioc, agent_loop(s), asio::detached);
    ioc.run();
}
