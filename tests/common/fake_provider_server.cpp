// The loopback Beast server behind fake_provider_server: one coroutine per connection, keep-alive.
#include "fake_provider_server.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include <atomic>
#include <thread>

namespace agentctx::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using asio::ip::tcp;

std::string recorded_request::header(const std::string& name) const
{
    for (const auto& [k, v] : headers)
        if (k == name)
            return v;
    return {};
}

struct fake_provider_server::impl
{
    asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    std::thread thread;
    mutable std::mutex mu;
    std::vector<std::pair<std::string, fake_provider_server::responder>> routes;
    std::deque<scripted_response> script;
    scripted_response fallback;
    std::vector<recorded_request> requests;
    std::atomic<std::size_t> accepted{0};
    bool anthropic_checks = false;

    scripted_response next(const recorded_request& rec)
    {
        std::lock_guard lock(mu);
        const std::string path = rec.target.substr(0, rec.target.find('?'));
        if (anthropic_checks &&
            (path.ends_with("/v1/messages") || path.ends_with("/v1/messages/count_tokens")))
            if (const auto why = anthropic_request_problem(rec.body))
            {
                scripted_response refused;
                refused.status = 400;
                refused.body = compaction::stringify(boost::json::object{
                    {"type", "error"},
                    {"error", boost::json::object{{"type", "invalid_request_error"}, {"message", *why}}}});
                return refused;
            }
        for (const auto& [suffix, answer] : routes)
            if (path.ends_with(suffix))
                return answer(rec);
        if (script.empty())
            return fallback;
        auto r = std::move(script.front());
        script.pop_front();
        return r;
    }

    asio::awaitable<void> accept_loop()
    {
        for (;;)
        {
            auto [ec, sock] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return;
            ++accepted;
            boost::system::error_code ignore;
            sock.set_option(tcp::no_delay(true), ignore);  // small SSE chunks: no Nagle / delayed-ACK stalls
            asio::co_spawn(ioc, serve(std::move(sock)), asio::detached);
        }
    }

    asio::awaitable<void> serve(tcp::socket sock)
    {
        beast::tcp_stream stream(std::move(sock));
        beast::flat_buffer buffer;
        for (;;)
        {
            http::request<http::string_body> req;
            auto [ec, n] =
                co_await http::async_read(stream, buffer, req, asio::as_tuple(asio::use_awaitable));
            if (ec)
                co_return;
            recorded_request rec;
            recorded_request copy;
            rec.method = std::string(req.method_string());
            rec.target = std::string(req.target());
            rec.body = req.body();
            for (const auto& f : req)
            {
                std::string name(f.name_string());
                for (auto& c : name)
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                rec.headers.emplace_back(std::move(name), std::string(f.value()));
            }
            copy = rec;
            {
                std::lock_guard lock(mu);
                requests.push_back(std::move(rec));
            }
            const auto r = next(copy);
            if (r.delay.count())
            {
                asio::steady_timer t(ioc, r.delay);
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
            if (r.reset_after)
            {
                // Announce the whole body, send part of it, then reset the connection.
                std::string raw = "HTTP/1.1 " + std::to_string(r.status) +
                                  " OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                  std::to_string(r.body.size()) + "\r\n\r\n" +
                                  r.body.substr(0, *r.reset_after);
                co_await asio::async_write(
                    stream.socket(), asio::buffer(raw), asio::as_tuple(asio::use_awaitable)
                );
                boost::system::error_code ignore;
                stream.socket().set_option(asio::socket_base::linger(true, 0), ignore);
                stream.socket().close(ignore);
                co_return;
            }
            if (!r.chunks.empty())
            {
                http::response<http::empty_body> res{static_cast<http::status>(r.status), req.version()};
                res.set(http::field::content_type, "text/event-stream");
                for (const auto& [k, v] : r.headers)
                    res.set(k, v);
                res.chunked(true);
                http::response_serializer<http::empty_body> sr{res};
                auto [wec, wn] =
                    co_await http::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
                if (wec)
                    co_return;
                for (const auto& c : r.chunks)
                {
                    if (r.chunk_gap.count())
                    {
                        asio::steady_timer t(ioc, r.chunk_gap);
                        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                    }
                    auto [cec, cn] = co_await asio::async_write(
                        stream, http::make_chunk(asio::buffer(c)), asio::as_tuple(asio::use_awaitable)
                    );
                    if (cec)
                        co_return;
                }
                if (r.stall)
                {
                    asio::steady_timer t(ioc, std::chrono::hours(1));
                    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                    co_return;
                }
                auto [lec, ln] = co_await asio::async_write(
                    stream, http::make_chunk_last(), asio::as_tuple(asio::use_awaitable)
                );
                if (lec)
                    co_return;
            }
            else
            {
                http::response<http::string_body> res{static_cast<http::status>(r.status), req.version()};
                res.set(http::field::content_type, "application/json");
                for (const auto& [k, v] : r.headers)
                    res.set(k, v);
                res.body() = r.body;
                res.keep_alive(req.keep_alive());
                res.prepare_payload();
                auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
                if (wec)
                    co_return;
            }
            if (!req.keep_alive())
                co_return;
        }
    }
};

fake_provider_server::fake_provider_server() : impl_(std::make_unique<impl>())
{
    impl_->fallback.body = openai_body("## Goal\ndefault reply");
    asio::co_spawn(impl_->ioc, impl_->accept_loop(), asio::detached);
    impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

fake_provider_server::~fake_provider_server()
{
    impl_->ioc.stop();
    impl_->thread.join();
}

std::string fake_provider_server::base_url() const
{
    return "http://127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port());
}

void fake_provider_server::route(std::string path_suffix, responder r)
{
    std::lock_guard lock(impl_->mu);
    impl_->routes.emplace_back(std::move(path_suffix), std::move(r));
}

void fake_provider_server::check_anthropic_requests(bool on)
{
    std::lock_guard lock(impl_->mu);
    impl_->anthropic_checks = on;
}

std::optional<std::string> anthropic_request_problem(const std::string& body)
{
    boost::system::error_code ec;
    const auto v = boost::json::parse(body, ec);
    if (ec || !v.is_object())
        return "the request body is not a JSON object";
    const auto& o = v.get_object();
    const auto* tools = o.if_contains("tools");
    const bool has_tools = tools && tools->is_array() && !tools->get_array().empty();
    if (o.contains("tool_choice") && !has_tools)
        return "tool_choice may only be specified while providing tools";
    const auto* messages = o.if_contains("messages");
    if (!messages || !messages->is_array())
        return "messages: Field required";
    for (const auto& m : messages->get_array())
    {
        const auto* content = m.is_object() ? m.get_object().if_contains("content") : nullptr;
        if (!content || !content->is_array())
            continue;
        for (const auto& b : content->get_array())
        {
            const auto* type = b.is_object() ? b.get_object().if_contains("type") : nullptr;
            if (type && type->is_string() &&
                (type->get_string() == "tool_use" || type->get_string() == "tool_result") && !has_tools)
                return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
        }
    }
    return std::nullopt;
}

void fake_provider_server::push(scripted_response r)
{
    std::lock_guard lock(impl_->mu);
    impl_->script.push_back(std::move(r));
}

void fake_provider_server::set_default(scripted_response r)
{
    std::lock_guard lock(impl_->mu);
    impl_->fallback = std::move(r);
}

std::vector<recorded_request> fake_provider_server::requests() const
{
    std::lock_guard lock(impl_->mu);
    return impl_->requests;
}

std::size_t fake_provider_server::connections() const
{
    return impl_->accepted;
}

std::string openai_body(
    const std::string& text, const std::string& finish, int prompt, int cached, int completion
)
{
    return compaction::stringify(json::object{
        {"id", "chatcmpl-1"},
        {"object", "chat.completion"},
        {"model", "gpt-test"},
        {"choices",
         json::array{json::object{
             {"index", 0},
             {"message",
              json::object{
                  {"role", "assistant"}, {"content", text}, {"reasoning_content", "hidden thoughts"}}},
             {"finish_reason", finish}}}},
        {"usage",
         json::object{
             {"prompt_tokens", prompt},
             {"completion_tokens", completion},
             {"total_tokens", prompt + completion},
             {"prompt_tokens_details", json::object{{"cached_tokens", cached}}}}},
    });
}

std::vector<std::string> openai_stream(const std::vector<std::string>& parts, const std::string& finish)
{
    std::vector<std::string> out;
    out.push_back(
        "data: " +
        compaction::stringify(json::object{
            {"model", "gpt-test"},
            {"choices",
             json::array{json::object{
                 {"index", 0},
                 {"delta", json::object{{"role", "assistant"}, {"reasoning_content", "thinking..."}}}}}}}) +
        "\n\n"
    );
    for (const auto& p : parts)
        out.push_back(
            "data: " +
            compaction::stringify(json::object{
                {"choices", json::array{json::object{{"index", 0}, {"delta", json::object{{"content", p}}}}}}}
            ) +
            "\n\n"
        );
    out.push_back(
        "data: " +
        compaction::stringify(json::object{
            {"choices",
             json::array{json::object{{"index", 0}, {"delta", json::object{}}, {"finish_reason", finish}}}}}
        ) +
        "\n\n"
    );
    out.push_back(
        "data: " +
        compaction::stringify(json::object{
            {"choices", json::array{}},
            {"usage",
             json::object{
                 {"prompt_tokens", 300},
                 {"completion_tokens", 30},
                 {"total_tokens", 330},
                 {"prompt_tokens_details", json::object{{"cached_tokens", 100}}}}}}) +
        "\n\ndata: [DONE]\n\n"
    );
    return out;
}

std::string anthropic_body(const std::string& text, const std::string& stop)
{
    return compaction::stringify(json::object{
        {"id", "msg_1"},
        {"type", "message"},
        {"role", "assistant"},
        {"model", "claude-test"},
        {"content",
         json::array{
             json::object{{"type", "thinking"}, {"thinking", "hidden"}, {"signature", "x"}},
             json::object{{"type", "text"}, {"text", text}}}},
        {"stop_reason", stop},
        {"usage",
         json::object{
             {"input_tokens", 50},
             {"output_tokens", 25},
             {"cache_read_input_tokens", 200},
             {"cache_creation_input_tokens", 10}}},
    });
}

std::vector<std::string> anthropic_stream(const std::vector<std::string>& parts, const std::string& stop)
{
    auto ev = [](const char* name, const json::object& data) {
        return std::string("event: ") + name + "\ndata: " + compaction::stringify(data) + "\n\n";
    };
    std::vector<std::string> out;
    out.push_back(
        ev("message_start",
           {{"type", "message_start"},
            {"message",
             json::object{
                 {"model", "claude-test"},
                 {"usage",
                  json::object{
                      {"input_tokens", 70},
                      {"output_tokens", 1},
                      {"cache_read_input_tokens", 30},
                      {"cache_creation_input_tokens", 0}}}}}})
    );
    out.push_back(
        ev("content_block_start",
           {{"type", "content_block_start"},
            {"index", 0},
            {"content_block", json::object{{"type", "thinking"}, {"thinking", ""}}}})
    );
    out.push_back(
        ev("content_block_delta",
           {{"type", "content_block_delta"},
            {"index", 0},
            {"delta", json::object{{"type", "thinking_delta"}, {"thinking", "hidden"}}}})
    );
    out.push_back(
        ev("content_block_start",
           {{"type", "content_block_start"},
            {"index", 1},
            {"content_block", json::object{{"type", "text"}, {"text", ""}}}})
    );
    for (const auto& p : parts)
        out.push_back(
            ev("content_block_delta",
               {{"type", "content_block_delta"},
                {"index", 1},
                {"delta", json::object{{"type", "text_delta"}, {"text", p}}}})
        );
    out.push_back(": keep-alive comment\n\n");
    out.push_back(
        ev("message_delta",
           {{"type", "message_delta"},
            {"delta", json::object{{"stop_reason", stop}}},
            {"usage", json::object{{"output_tokens", 40}}}})
    );
    out.push_back(ev("message_stop", {{"type", "message_stop"}}));
    return out;
}

std::string anthropic_count_body(std::int64_t tokens)
{
    return compaction::stringify(json::object{{"input_tokens", tokens}});
}

std::string openai_count_body(std::int64_t tokens)
{
    return compaction::stringify(json::object{{"object", "response.input_tokens"}, {"input_tokens", tokens}});
}

std::string anthropic_compaction_block(
    const std::optional<std::string>& content, const std::string& encrypted
)
{
    return compaction::stringify(json::object{
        {"type", "compaction"},
        {"content", content ? json::value(*content) : json::value(nullptr)},
        {"encrypted_content", encrypted}});
}

std::string anthropic_compaction_body(const std::vector<std::string>& blocks)
{
    json::array content;
    for (const auto& b : blocks)
        content.push_back(json::parse(b));
    return compaction::stringify(json::object{
        {"id", "msg_compact_1"},
        {"type", "message"},
        {"role", "assistant"},
        {"model", "claude-test"},
        {"content", std::move(content)},
        {"stop_reason", "compaction"},
        {"usage",
         json::object{
             {"input_tokens", 12},
             {"output_tokens", 0},
             {"cache_read_input_tokens", 300},
             {"cache_creation_input_tokens", 0},
             {"iterations",
              json::array{
                  json::object{{"type", "compaction"}, {"input_tokens", 61000}, {"output_tokens", 900}}}}}},
    });
}

std::vector<std::string> anthropic_compaction_stream(const std::string& content, const std::string& encrypted)
{
    auto ev = [](const char* name, const json::object& data) {
        return std::string("event: ") + name + "\ndata: " + compaction::stringify(data) + "\n\n";
    };
    std::vector<std::string> out;
    out.push_back(
        ev("message_start",
           {{"type", "message_start"},
            {"message",
             json::object{
                 {"id", "msg_s1"},
                 {"type", "message"},
                 {"role", "assistant"},
                 {"model", "claude-test"},
                 {"content", json::array{}},
                 {"usage", json::object{{"input_tokens", 12}, {"output_tokens", 0}}}}}})
    );
    out.push_back(
        ev("content_block_start",
           {{"type", "content_block_start"},
            {"index", 0},
            {"content_block",
             json::object{{"type", "compaction"}, {"content", nullptr}, {"encrypted_content", nullptr}}}})
    );
    out.push_back(ev(
        "content_block_delta",
        {{"type", "content_block_delta"},
         {"index", 0},
         {"delta",
          json::object{{"type", "compaction_delta"}, {"content", content}, {"encrypted_content", encrypted}}}}
    ));
    out.push_back(ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}));
    out.push_back(
        ev("message_delta",
           {{"type", "message_delta"},
            {"delta", json::object{{"stop_reason", "compaction"}}},
            {"usage",
             json::object{
                 {"output_tokens", 0},
                 {"iterations",
                  json::array{json::object{
                      {"type", "compaction"}, {"input_tokens", 70000}, {"output_tokens", 800}}}}}}})
    );
    out.push_back(ev("message_stop", {{"type", "message_stop"}}));
    return out;
}

std::string openai_compaction_item(const std::string& encrypted)
{
    return compaction::stringify(json::object{
        {"type", "compaction"}, {"id", "cmp_item_1"}, {"encrypted_content", encrypted}});
}

std::string openai_compact_body(
    const std::vector<std::string>& user_texts, const std::vector<std::string>& items
)
{
    json::array output;
    for (const auto& t : user_texts)
        output.push_back(json::object{
            {"type", "message"},
            {"role", "user"},
            {"content", json::array{json::object{{"type", "input_text"}, {"text", t}}}}});
    for (const auto& i : items)
        output.push_back(json::parse(i));
    return compaction::stringify(json::object{
        {"id", "cmp_1"},
        {"created_at", 1764547200},
        {"object", "response.compaction"},
        {"output", std::move(output)},
        {"usage",
         json::object{
             {"input_tokens", 64000},
             {"input_tokens_details", json::object{{"cached_tokens", 1000}}},
             {"output_tokens", 700},
             {"total_tokens", 64700}}},
    });
}

std::string anthropic_model_body(const std::string& id, bool compaction_supported)
{
    return compaction::stringify(json::object{
        {"type", "model"},
        {"id", id},
        {"display_name", id},
        {"capabilities",
         json::object{
             {"context_management",
              json::object{{"compact_20260112", json::object{{"supported", compaction_supported}}}}}}},
    });
}

namespace {

scripted_response invalid_request(const std::string& message)
{
    scripted_response out;
    out.status = 400;
    out.body = compaction::stringify(json::object{
        {"error", json::object{{"type", "invalid_request_error"}, {"message", message}}}});
    return out;
}

}  // namespace

scripted_response openai_inline_reply(const recorded_request& r, const std::string& encrypted)
{
    boost::system::error_code ec;
    const auto v = json::parse(r.body, ec);
    if (ec || !v.is_object() || !v.get_object().contains("input") || !v.at("input").is_array())
        return invalid_request("input: Field required");
    const auto& o = v.get_object();
    const auto& input = o.at("input").get_array();
    std::optional<std::int64_t> threshold;
    if (const auto* cm = o.if_contains("context_management"))
    {
        if (!cm->is_array())
            return invalid_request("context_management: expected an array");
        for (const auto& m : cm->get_array())
        {
            if (!m.is_object() || !m.get_object().contains("type") || m.at("type") != "compaction")
                return invalid_request("context_management[].type: only 'compaction' is supported");
            if (const auto* t = m.get_object().if_contains("compact_threshold"); t && t->is_int64())
                threshold = t->get_int64();
        }
    }
    bool triggered = false;
    for (std::size_t i = 0; i < input.size(); ++i)
        if (input[i].is_object() && input[i].get_object().contains("type") &&
            input[i].at("type") == "compaction_trigger")
        {
            if (i + 1 != input.size())
                return invalid_request("compaction_trigger must be the final input item");
            triggered = true;
        }
    const bool over = threshold && static_cast<std::int64_t>(r.body.size() / 4) > *threshold;
    json::array output;
    if (triggered || over)
    {
        output.push_back(json::object{{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array{}}});
        output.push_back(json::parse(openai_compaction_item(encrypted)));
    }
    // The loop's own request answers after compacting; a trigger asks for the compaction alone.
    if (!triggered)
        output.push_back(json::object{
            {"type", "message"},
            {"role", "assistant"},
            {"content", json::array{json::object{{"type", "output_text"}, {"text", "ok"}}}}});
    scripted_response out;
    out.body = compaction::stringify(json::object{
        {"id", "resp_inline"},
        {"object", "response"},
        {"status", "completed"},
        {"model", o.contains("model") ? o.at("model") : json::value("m")},
        {"output", std::move(output)},
        {"usage", json::object{{"input_tokens", 52000}, {"output_tokens", 900}, {"total_tokens", 52900}}}});
    return out;
}

}  // namespace agentctx::test
