// Wire formats: request bodies, response and event-stream parsing, error classification, backoff.
#include "wire_format.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/overflow.hpp>
#include <agentctx/providers/provider_url.hpp>

#include "json_fields.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <random>

namespace agentctx::providers {

namespace json = boost::json;
using compaction::stop_reason;
using namespace detail;

namespace {

void openai_usage(const json::object& u, compaction::usage& out)
{
    const auto read = chat_completions_usage(u);
    out.input = read.input;
    out.cache_read = read.cache_read;
    out.cache_write = 0;
    out.output = read.output;
    out.total_tokens = read.total_tokens;
}

// OpenAI `tool_calls` entries (streamed deltas repeat an index): the number of calls seen.
void count_openai_tool_calls(const json::object& message_or_delta, std::size_t& count)
{
    if (const auto* calls = message_or_delta.if_contains("tool_calls"); calls && calls->is_array())
        for (const auto& c : calls->get_array())
        {
            const auto idx = c.is_object() && c.get_object().contains("index")
                                 ? int_of(c.get_object(), "index")
                                 : static_cast<std::int64_t>(count);
            count = std::max(count, static_cast<std::size_t>(std::max<std::int64_t>(idx, 0)) + 1);
        }
    if (const auto* f = message_or_delta.if_contains("function_call"); f && f->is_object())
        count = std::max<std::size_t>(count, 1);  // legacy single call
}

const json::object ephemeral{{"type", "ephemeral"}};

std::size_t breakpoints_in(const json::array& blocks)
{
    return static_cast<std::size_t>(std::count_if(blocks.begin(), blocks.end(), [](const json::value& b) {
        return b.is_object() && b.get_object().contains("cache_control");
    }));
}

// Marks the last block of `blocks` as a cache breakpoint unless one is there already.
void mark_last(json::array& blocks, std::size_t& used)
{
    if (blocks.empty() || !blocks.back().is_object() || breakpoints_in(blocks) > 0 || used >= 4)
        return;
    blocks.back().get_object()["cache_control"] = ephemeral;
    ++used;
}

// Anthropic's cache-friendly body: the conversation's system, tools and messages with breakpoints
// on the system prompt, the tool list and the conversation's last block (the host's own markers
// inside messages are dropped: the last one covers them), then the instruction message.
void anthropic_head(const compaction::request_head& head, const std::string& prompt, json::object& body)
{
    std::size_t used = 0;
    json::array system;
    if (head.system.is_string() && !head.system.get_string().empty())
        system.push_back(json::object{{"type", "text"}, {"text", head.system.get_string()}});
    else if (head.system.is_array())
        system = head.system.get_array();
    json::array tools = head.tools;
    used = breakpoints_in(system) + breakpoints_in(tools);
    mark_last(system, used);
    mark_last(tools, used);
    if (!system.empty())
        body["system"] = std::move(system);
    if (!tools.empty())
        body["tools"] = std::move(tools);
    json::array messages = head.messages;
    for (auto& m : messages)
    {
        auto* content = m.is_object() ? m.get_object().if_contains("content") : nullptr;
        if (content && content->is_string())
            *content = json::array{json::object{{"type", "text"}, {"text", content->get_string()}}};
        if (content && content->is_array())
            for (auto& b : content->get_array())
                if (b.is_object())
                    b.get_object().erase("cache_control");
    }
    if (!messages.empty() && messages.back().is_object())
        if (auto* content = messages.back().get_object().if_contains("content");
            content && content->is_array())
            mark_last(content->get_array(), used);
    messages.push_back(json::object{
        {"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", prompt}}}}});
    body["messages"] = std::move(messages);
}

// Chat Completions' cache-friendly body: the conversation's system message, messages and tools,
// its prompt_cache_key, then the instruction message.
void openai_head(const compaction::request_head& head, const std::string& prompt, json::object& body)
{
    json::array messages;
    if (!head.system.is_null())
        messages.push_back(json::object{{"role", "system"}, {"content", head.system}});
    messages.insert(messages.end(), head.messages.begin(), head.messages.end());
    messages.push_back(json::object{{"role", "user"}, {"content", prompt}});
    body["messages"] = std::move(messages);
    if (!head.tools.empty())
        body["tools"] = head.tools;
    if (head.prompt_cache_key)
        body["prompt_cache_key"] = *head.prompt_cache_key;
}

}  // namespace

std::string new_routing_id()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const auto ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                   std::chrono::system_clock::now().time_since_epoch()
    )
                                                   .count());
    std::uint8_t b[16];
    for (int i = 0; i < 6; ++i)
        b[i] = static_cast<std::uint8_t>(ms >> (8 * (5 - i)));
    const std::uint64_t r1 = rng(), r2 = rng();
    for (int i = 0; i < 10; ++i)
        b[6 + i] = static_cast<std::uint8_t>(i < 8 ? r1 >> (8 * i) : r2 >> (8 * (i - 8)));
    b[6] = static_cast<std::uint8_t>(0x70 | (b[6] & 0x0F));  // version 7
    b[8] = static_cast<std::uint8_t>(0x80 | (b[8] & 0x3F));  // variant 10xx
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(36);
    for (int i = 0; i < 16; ++i)
    {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out += '-';
        out += hex[b[i] >> 4];
        out += hex[b[i] & 0x0F];
    }
    return out;
}

void add_auxiliary_call_fields(const provider_config& cfg, json::object& body)
{
    if (cfg.auto_continue)
        body["auto_continue"] = false;
}

void set_read_deadline(const provider_config& cfg, bool streamed, http_request& r)
{
    r.idle_timeout = streamed ? cfg.idle_timeout : std::chrono::seconds(0);
    r.keepalive_interval = cfg.keepalive_interval;
}

http_request build_request(const provider_config& cfg, const compaction::summary_prompt& prompt)
{
    http_request r;
    r.connect_timeout = cfg.connect_timeout;
    set_read_deadline(cfg, cfg.stream, r);
    r.max_response_bytes = cfg.max_response_bytes;
    r.headers.emplace_back("content-type", "application/json");
    json::object body;
    body["model"] = cfg.model;
    const auto cap = static_cast<std::int64_t>(prompt.max_output_tokens);
    if (cfg.format == wire_format::openai)
    {
        r.url = join_url(cfg.base_url, "/chat/completions");
        if (!cfg.api_key.empty())
            r.headers.emplace_back("authorization", "Bearer " + cfg.api_key);
        if (prompt.head)
            openai_head(*prompt.head, prompt.prompt, body);
        else
            body["messages"] = json::array{
                json::object{{"role", "system"}, {"content", prompt.system_prompt}},
                json::object{{"role", "user"}, {"content", prompt.prompt}}};
        if (cap > 0)
            body["max_tokens"] = cap;  // understood by OpenAI and every compatible server
        if (prompt.reasoning_effort)
            body["reasoning_effort"] = *prompt.reasoning_effort;
        if (cfg.stream)
        {
            body["stream"] = true;
            body["stream_options"] = json::object{{"include_usage", true}};
        }
    }
    else
    {
        r.url =
            join_url(cfg.base_url, url_path_ends_with(cfg.base_url, "/v1") ? "/messages" : "/v1/messages");
        if (!cfg.api_key.empty())
            r.headers.emplace_back("x-api-key", cfg.api_key);
        r.headers.emplace_back("anthropic-version", cfg.anthropic_version);
        body["max_tokens"] = cap > 0 ? cap : 4096;
        if (prompt.head)
            anthropic_head(*prompt.head, prompt.prompt, body);
        else
        {
            body["system"] = prompt.system_prompt;
            body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt.prompt}}};
        }
        body["metadata"] =
            json::object{{"user_id", prompt.routing_id ? *prompt.routing_id : new_routing_id()}};
        if (cfg.stream)
            body["stream"] = true;
    }
    add_auxiliary_call_fields(cfg, body);
    r.body = compaction::stringify(body);
    return r;
}

compaction::result<model_reply> parse_response(wire_format f, std::string_view body, diagnostics& diag)
{
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    if (ec || !v.is_object())
    {
        diag.message = "the response is not a JSON object";
        return make_error_code(errc::malformed_response);
    }
    const auto& o = v.get_object();
    model_reply r;
    r.model = str_of(o, "model");
    if (f == wire_format::openai)
    {
        const auto* choices = o.if_contains("choices");
        if (!choices || !choices->is_array() || choices->get_array().empty() ||
            !choices->get_array()[0].is_object())
        {
            diag.message = "the response has no choices";
            return make_error_code(errc::malformed_response);
        }
        const auto& c = choices->get_array()[0].get_object();
        const auto* msg = c.if_contains("message");
        if (!msg || !msg->is_object())
        {
            diag.message = "the response has no message";
            return make_error_code(errc::malformed_response);
        }
        r.output.text = str_of(msg->get_object(), "content");  // reasoning_content is not summary text
        count_openai_tool_calls(msg->get_object(), r.output.tool_calls);
        r.output.stop = openai_stop(str_of(c, "finish_reason"));
        if (const auto* u = o.if_contains("usage"); u && u->is_object())
            openai_usage(u->get_object(), r.usage);
        r.output.usage = r.usage;
        return r;
    }
    const auto* content = o.if_contains("content");
    if (!content || !content->is_array())
    {
        diag.message = "the response has no content";
        return make_error_code(errc::malformed_response);
    }
    std::vector<std::string> texts;
    for (const auto& b : content->get_array())
    {
        const std::string type = b.is_object() ? str_of(b.get_object(), "type") : std::string();
        if (type == "text")  // thinking blocks excluded
            texts.push_back(str_of(b.get_object(), "text"));
        else if (type == "tool_use")
            ++r.output.tool_calls;
    }
    for (std::size_t i = 0; i < texts.size(); ++i)
        r.output.text += (i ? "\n" : "") + texts[i];
    r.output.stop = anthropic_stop(str_of(o, "stop_reason"));
    if (const auto* u = o.if_contains("usage"); u && u->is_object())
        anthropic_usage(u->get_object(), r.usage);
    r.output.usage = r.usage;
    return r;
}

std::vector<sse_parser::event> sse_parser::feed(std::string_view chunk)
{
    std::vector<event> out;
    buffer_.append(chunk);
    std::size_t pos = 0;  // start of the current line
    for (;;)
    {
        const auto nl = buffer_.find('\n', std::max(pos, scanned_));
        if (nl == std::string::npos)
        {
            scanned_ = buffer_.size();
            break;
        }
        std::string_view line(buffer_.data() + pos, nl - pos);
        pos = nl + 1;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.empty())
        {
            if (!data_.empty() || !name_.empty())
                out.push_back({std::move(name_), std::move(data_)});
            name_.clear();
            data_.clear();
            continue;
        }
        if (line.front() == ':')
            continue;  // comment / keep-alive
        const auto colon = line.find(':');
        std::string_view field = line.substr(0, colon);
        std::string_view value =
            colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ')
            value.remove_prefix(1);
        if (field == "event")
            name_ = value;
        else if (field == "data")
        {
            if (!data_.empty())
                data_ += '\n';
            data_ += value;
        }
    }
    buffer_.erase(0, pos);  // what is left came with this chunk: linear overall
    scanned_ -= pos;
    return out;
}

void stream_accumulator::feed(std::string_view chunk)
{
    for (const auto& e : parser_.feed(chunk))
        if (!error_)
            on_event(e);
}

namespace {

// One Chat Completions chunk into `reply`; `complete` once a choice has its finish_reason.
void openai_chunk(const json::object& o, model_reply& reply, bool& complete)
{
    if (const auto m = str_of(o, "model"); !m.empty())
        reply.model = m;
    if (const auto* choices = o.if_contains("choices");
        choices && choices->is_array() && !choices->get_array().empty())
    {
        const auto& c = choices->get_array()[0];
        if (c.is_object())
        {
            if (const auto* d = c.get_object().if_contains("delta"); d && d->is_object())
            {
                reply.output.text += str_of(d->get_object(), "content");  // not reasoning_content
                count_openai_tool_calls(d->get_object(), reply.output.tool_calls);
            }
            if (const auto f = str_of(c.get_object(), "finish_reason"); !f.empty())
            {
                reply.output.stop = openai_stop(f);
                complete = true;
            }
        }
    }
    if (const auto* u = o.if_contains("usage"); u && u->is_object())
        openai_usage(u->get_object(), reply.usage);
}

// A Messages stream's content_block_start: a second text block is joined with "\n", as
// non-streaming text blocks are; a tool_use block is counted.
void anthropic_block_start(const json::object& o, model_reply& reply)
{
    if (const auto* b = o.if_contains("content_block"); b && b->is_object())
    {
        const std::string block = str_of(b->get_object(), "type");
        if (block == "text" && !reply.output.text.empty())
            reply.output.text += "\n";
        else if (block == "tool_use")
            ++reply.output.tool_calls;
    }
}

// One Messages stream event into `reply`; `complete` at message_stop.
void anthropic_event(const json::object& o, model_reply& reply, bool& complete)
{
    const std::string type = str_of(o, "type");
    if (type == "message_start")
    {
        if (const auto* m = o.if_contains("message"); m && m->is_object())
        {
            reply.model = str_of(m->get_object(), "model");
            if (const auto* u = m->get_object().if_contains("usage"); u && u->is_object())
                anthropic_usage(u->get_object(), reply.usage);
        }
    }
    else if (type == "content_block_delta")
    {
        if (const auto* d = o.if_contains("delta");
            d && d->is_object() && str_of(d->get_object(), "type") == "text_delta")
            reply.output.text += str_of(d->get_object(), "text");  // thinking_delta is not summary text
    }
    else if (type == "content_block_start")
        anthropic_block_start(o, reply);
    else if (type == "message_delta")
    {
        if (const auto* d = o.if_contains("delta"); d && d->is_object())
            if (const auto r = str_of(d->get_object(), "stop_reason"); !r.empty())
                reply.output.stop = anthropic_stop(r);
        if (const auto* u = o.if_contains("usage"); u && u->is_object())
            anthropic_usage(u->get_object(), reply.usage);
    }
    else if (type == "message_stop")
        complete = true;
}

}  // namespace

void stream_accumulator::on_event(const sse_parser::event& e)
{
    if (e.data == "[DONE]")
    {
        complete_ = true;
        return;
    }
    const auto event = event_object(e, error_, error_diag_);
    if (!event)
        return;
    if (format_ == wire_format::openai)
        openai_chunk(*event, reply_, complete_);
    else
        anthropic_event(*event, reply_, complete_);
}

boost::system::error_code classify_error(long status, std::string_view body, diagnostics& diag)
{
    diag.http_status = status;
    std::string type, code, api_message;
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    if (!ec && v.is_object())
    {
        const auto* err = v.get_object().if_contains("error");
        if (err && err->is_object())
        {
            type = str_of(err->get_object(), "type");
            code = str_of(err->get_object(), "code");
            api_message = str_of(err->get_object(), "message");
        }
        else if (err && err->is_string())
            api_message = std::string(err->get_string());
    }
    diag.error_type = !code.empty() ? code : type;
    auto label = [&](const char* what) {
        diag.message = std::string(what) + (status ? " (HTTP " + std::to_string(status) + ")" : "") +
                       (diag.error_type.empty() ? "" : ": " + diag.error_type);
    };
    const bool overflow_code = code == "context_length_exceeded" || type == "request_too_large" ||
                               code == "model_context_window_exceeded";
    if (overflow_code || compaction::is_overflow_error_message(api_message) ||
        ((status == 400 || status == 413) && body.empty()))
    {
        label("the prompt exceeds the model's context window");
        return make_error_code(errc::context_overflow);
    }
    if (status == 429 || type == "rate_limit_error" || code == "rate_limit_exceeded")
    {
        label("rate limited");
        return make_error_code(errc::rate_limited);
    }
    if (status >= 500 || type == "overloaded_error" || type == "api_error" || status == 408)
    {
        label("the provider failed");
        return make_error_code(errc::transient);
    }
    if (status == 401 || status == 403 || type == "authentication_error" || type == "permission_error")
    {
        label("authentication failed");
        return make_error_code(errc::auth);
    }
    label("the request was rejected");
    return make_error_code(errc::invalid_request);
}

std::chrono::milliseconds backoff_delay(const provider_config& cfg, int attempt, std::uint64_t jitter_seed)
{
    const auto base = cfg.base_delay.count() * (std::int64_t{1} << std::min(attempt - 1, 20));
    // ±25% jitter from a cheap hash of the seed: spreads retries of many clients apart.
    std::uint64_t h = jitter_seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(attempt);
    h ^= h >> 31;
    const double j = 0.75 + 0.5 * static_cast<double>(h % 1000) / 1000.0;
    const auto d = static_cast<std::int64_t>(static_cast<double>(base) * j);
    return std::chrono::milliseconds(std::min<std::int64_t>(d, cfg.max_delay.count()));
}

}  // namespace agentctx::providers
