// Native compaction and exact counting: request bodies, strict response checks, stored-state revalidation.
#include "native_compaction.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/chat_messages.hpp>
#include <agentctx/providers/provider_url.hpp>

#include "json_fields.hpp"

#include <boost/json/parse.hpp>

namespace agentctx::providers {

namespace json = boost::json;
using namespace detail;

namespace {

std::string_view provider_name(wire_format f)
{
    return f == wire_format::anthropic ? "anthropic" : "openai";
}

std::string anthropic_url(const provider_config& cfg, std::string_view path)
{
    return join_url(cfg.base_url, (url_path_ends_with(cfg.base_url, "/v1") ? "" : "/v1") + std::string(path));
}

http_request base_request(const provider_config& cfg)
{
    http_request r;
    r.connect_timeout = cfg.connect_timeout;
    set_read_deadline(cfg, false, r);  // the streamed native call sets its own
    r.max_response_bytes = cfg.max_response_bytes;
    r.headers.emplace_back("content-type", "application/json");
    if (cfg.format == wire_format::anthropic)
    {
        if (!cfg.api_key.empty())
            r.headers.emplace_back("x-api-key", cfg.api_key);
        r.headers.emplace_back("anthropic-version", cfg.anthropic_version);
    }
    else if (!cfg.api_key.empty())
        r.headers.emplace_back("authorization", "Bearer " + cfg.api_key);
    return r;
}

bool is_string_or_null(const json::value* v)
{
    return v && (v->is_string() || v->is_null());
}

// Anthropic's compaction block: `content` a non-empty string (null = the compaction failed).
bool valid_anthropic_block(const json::value& b, std::string& why)
{
    if (!b.is_object() || str_of(b.get_object(), "type") != "compaction")
        return why = "the block is not a compaction block", false;
    const auto& o = b.get_object();
    const auto* content = o.if_contains("content");
    if (!content || content->is_null())
        return why = "the compaction block's content is null: the provider's compaction failed", false;
    if (!content->is_string() || content->get_string().empty())
        return why = "the compaction block's content is not a non-empty string", false;
    if (o.contains("encrypted_content") && !is_string_or_null(o.if_contains("encrypted_content")))
        return why = "the compaction block's encrypted_content is not a string", false;
    return true;
}

// OpenAI's compact output: user messages, then exactly one compaction item, last.
bool valid_openai_output(const json::value& v, std::string& why)
{
    if (!v.is_array() || v.get_array().empty())
        return why = "the response has no output items", false;
    const auto& items = v.get_array();
    std::size_t compactions = 0;
    for (std::size_t i = 0; i < items.size(); ++i)
    {
        if (!items[i].is_object())
            return why = "output item " + std::to_string(i) + " is not an object", false;
        const auto& o = items[i].get_object();
        const std::string type = str_of(o, "type");
        if (type == "compaction")
        {
            ++compactions;
            const auto* enc = o.if_contains("encrypted_content");
            if (!enc || !enc->is_string() || enc->get_string().empty())
                return why = "the compaction item has no encrypted_content", false;
            continue;
        }
        if ((type.empty() || type == "message") && str_of(o, "role") == "user")
        {
            if (compactions > 0)
                return why = "a user message follows the compaction item", false;
            continue;
        }
        return why = "output item " + std::to_string(i) + " is a '" +
                     (type.empty() ? str_of(o, "role") : type) +
                     "', not a user message or the compaction item",
               false;
    }
    if (compactions != 1)
        return why = "the output has " + std::to_string(compactions) +
                     " compaction items; exactly one is required",
               false;
    return true;
}

json::object parse_object(std::string_view body, diagnostics& diag, bool& ok)
{
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    ok = !ec && v.is_object();
    if (!ok)
    {
        diag.message = "the response is not a JSON object";
        return {};
    }
    return std::move(v.get_object());
}

// Anthropic: `iterations` (present when a compaction ran) include the compaction pass, which
// the top-level counts leave out; the cache buckets are the top level's.
compaction::usage anthropic_native_usage(const json::object& u)
{
    compaction::usage out;
    anthropic_usage(u, out);
    if (const auto* it = u.if_contains("iterations"); it && it->is_array() && !it->get_array().empty())
    {
        std::int64_t in = 0, outp = 0;
        for (const auto& i : it->get_array())
            if (i.is_object())
            {
                in = sat_add(in, int_of(i.get_object(), "input_tokens"));
                outp = sat_add(outp, int_of(i.get_object(), "output_tokens"));
            }
        out.input = in;
        out.output = outp;
        out.total_tokens = sat_add(sat_add(out.input, out.output), sat_add(out.cache_read, out.cache_write));
    }
    return out;
}

bool blank(std::string_view s)
{
    return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// The parameters a native request sets itself; the loop's values for them are not copied.
bool set_by_the_request(std::string_view key)
{
    for (const std::string_view own :
         {"model",
          "messages",
          "system",
          "max_tokens",
          "stream",
          "context_management",
          "compaction",
          "metadata",
          "tools",
          "tool_choice"})
        if (key == own)
            return true;
    return false;
}

// The loop's tools, tool_choice and other request parameters, as the loop sends them.
void add_loop_request(const native_request& req, json::object& body)
{
    if (!req.tools.empty())
        body["tools"] = req.tools;
    if (!req.tool_choice.is_null())
        body["tool_choice"] = req.tool_choice;
    for (const auto& [key, value] : req.parameters)
        if (!set_by_the_request(key))
            body[key] = value;
}

// The window as Anthropic messages, ending with a user turn (the edit runs before the model answers).
json::array anthropic_native_messages(const native_request& req, const native_replay* previous)
{
    auto messages = to_wire_messages(wire_format::anthropic, req.window, previous);
    const json::object ask{{"type", "text"}, {"text", "Compact the conversation so far."}};
    if (messages.empty() || messages.back().as_object().at("role").as_string() != "user")
        messages.push_back(json::object{{"role", "user"}, {"content", json::array{ask}}});
    return messages;
}

// Extended thinking needs max_tokens above its budget: the loop's budget keeps 4096 tokens over it.
std::int64_t anthropic_max_tokens(const native_request& req)
{
    std::int64_t cap = req.max_output_tokens > 0 ? static_cast<std::int64_t>(req.max_output_tokens) : 4096;
    if (const auto* t = req.parameters.if_contains("thinking"); t && t->is_object())
        if (const auto* b = t->get_object().if_contains("budget_tokens");
            b && b->is_int64() && b->get_int64() >= cap)
            cap = b->get_int64() + 4096;
    return cap;
}

// The beta that lets a request say what a thinking block failing its binding check does.
constexpr std::string_view thinking_binding_beta = "thinking-binding-controls-2026-08-01";

// A request agentctx builds with the loop's thinking never fails on a thinking block whose prefix
// changed (the default is a 400): such blocks are dropped instead. The host's own choice stays.
// True when the body's thinking asks for it, so the request names the beta.
bool drop_unbound_thinking(json::object& body)
{
    auto* t = body.if_contains("thinking");
    if (!t || !t->is_object())
        return false;
    auto& thinking = t->get_object();
    const auto* type = thinking.if_contains("type");
    if (!type || !type->is_string() || (type->get_string() != "enabled" && type->get_string() != "adaptive"))
        return false;
    if (const auto* b = thinking.if_contains("block_binding"); !b || b->is_null())
        thinking["block_binding"] = json::object{{"prefix_mismatch_behavior", "drop_block"}};
    return true;
}

// `compact-2026-01-12`, and the binding beta when the body's thinking sets its behaviour.
std::string anthropic_betas(bool binding)
{
    std::string betas(anthropic_compaction_beta);
    if (binding)
        betas += "," + std::string(thinking_binding_beta);
    return betas;
}

// The compaction request: the edit form (`context_management.edits[compact_20260112]`, paused
// after the compaction) or, with `compaction_parameter`, the on-demand `compaction` parameter,
// which takes no trigger and no pause flag and treats blank instructions as absent.
void anthropic_native_body(
    const provider_config& cfg, const native_request& req, const native_replay* previous, json::object& body
)
{
    add_loop_request(req, body);
    body["max_tokens"] = anthropic_max_tokens(req);
    if (!req.system.empty())
        body["system"] = req.system;
    body["messages"] = anthropic_native_messages(req, previous);
    if (cfg.compaction_parameter)
    {
        json::object compaction{{"type", "summarize"}};
        if (req.instructions && !blank(*req.instructions))
            compaction["instructions"] = *req.instructions;
        body["compaction"] = std::move(compaction);
    }
    else
    {
        json::object edit{
            {"type", "compact_20260112"},
            {"trigger", json::object{{"type", "input_tokens"}, {"value", req.trigger_tokens}}},
            {"pause_after_compaction", true}};
        edit["instructions"] = req.instructions ? json::value(*req.instructions) : json::value(nullptr);
        body["context_management"] = json::object{{"edits", json::array{std::move(edit)}}};
    }
    body["metadata"] = json::object{{"user_id", new_routing_id()}};
    if (cfg.stream)
        body["stream"] = true;
}

compaction::result<native_reply> invalid(diagnostics& diag, std::string why)
{
    diag.message = std::move(why);
    return make_error_code(errc::native_invalid);
}

}  // namespace

json::object to_json(const native_state& s)
{
    json::object o{{"provider", provider_name(s.format)}, {"model", s.model}};
    o[s.format == wire_format::anthropic ? "block" : "output"] = s.item;
    return o;
}

compaction::result<native_state> parse_native_state(const json::value& v, diagnostics& diag)
{
    auto bad = [&](std::string why) -> compaction::result<native_state> {
        diag.message = "details.agentctx.native: " + why;
        return make_error_code(errc::native_invalid);
    };
    if (!v.is_object())
        return bad("not an object");
    const auto& o = v.get_object();
    const std::string provider = str_of(o, "provider");
    const auto* model = o.if_contains("model");
    if (provider != "anthropic" && provider != "openai")
        return bad("provider is not \"anthropic\" or \"openai\"");
    if (!model || !model->is_string())
        return bad("model is not a string");
    native_state s;
    s.format = provider == "anthropic" ? wire_format::anthropic : wire_format::openai;
    s.model = std::string(model->get_string());
    std::string why;
    const auto* item = o.if_contains(s.format == wire_format::anthropic ? "block" : "output");
    if (!item)
        return bad(s.format == wire_format::anthropic ? "block is missing" : "output is missing");
    if (s.format == wire_format::anthropic ? !valid_anthropic_block(*item, why)
                                           : !valid_openai_output(*item, why))
        return bad(why);
    s.item = *item;
    return s;
}

namespace {

// The Responses body of a native request and of its count: the window as input items (the
// previous native state replayed), the system prompt as instructions.
void responses_native_body(const native_request& req, const native_replay* previous, json::object& body)
{
    body["input"] = to_responses_input(req.window, previous);
    if (!req.system.empty())
        body["instructions"] = req.system;
}

// OpenAI inline compaction: an ordinary Responses request whose input ends with the
// `compaction_trigger` item (compact now), with `context_management` at the session's threshold;
// not stored by the provider (the state is kept here).
void responses_inline_body(const native_request& req, const native_replay* previous, json::object& body)
{
    responses_native_body(req, previous, body);
    body["input"].as_array().push_back(compaction_trigger_item());
    body["context_management"] = inline_context_management(req.compact_threshold);
    body["store"] = false;
}

// An inline reply (a Response object): exactly one compaction item, beside reasoning items only;
// the state kept is that item alone (the kept messages follow it in the context).
compaction::result<json::array> inline_output(const json::object& o, diagnostics& diag)
{
    const auto* output = o.if_contains("output");
    if (!output || !output->is_array())
        return invalid(diag, "the response has no output").error();
    json::array kept;
    for (std::size_t i = 0; i < output->get_array().size(); ++i)
    {
        const auto& item = output->get_array()[i];
        const std::string type = item.is_object() ? str_of(item.get_object(), "type") : std::string();
        if (type == "compaction")
            kept.push_back(item);
        else if (type != "reasoning")
            return invalid(
                       diag,
                       "output item " + std::to_string(i) + " is a '" + type + "', not the compaction item"
            )
                .error();
    }
    if (kept.size() != 1)
        return invalid(
                   diag,
                   "the response has " + std::to_string(kept.size()) +
                       " compaction items; exactly one is required"
        )
            .error();
    std::string why;
    if (!valid_openai_output(kept, why))
        return invalid(diag, why).error();
    return kept;
}

}  // namespace

http_request build_native_request(const provider_config& cfg, const native_request& req)
{
    http_request r = base_request(cfg);
    const std::string model = req.model.empty() ? cfg.model : req.model;
    const native_replay* previous = req.previous ? &*req.previous : nullptr;
    json::object body{{"model", model}};
    if (cfg.format == wire_format::anthropic)
    {
        r.url = anthropic_url(cfg, "/messages");
        anthropic_native_body(cfg, req, previous, body);
        r.headers.emplace_back("anthropic-beta", anthropic_betas(drop_unbound_thinking(body)));
        set_read_deadline(cfg, cfg.stream, r);
    }
    else if (cfg.openai_form == openai_native_form::compact_endpoint)
    {
        r.url = join_url(cfg.base_url, "/responses/compact");
        responses_native_body(req, previous, body);
    }
    else
    {
        r.url = join_url(cfg.base_url, "/responses");
        responses_inline_body(req, previous, body);
    }
    add_auxiliary_call_fields(cfg, body);
    r.body = compaction::stringify(body);
    return r;
}

compaction::result<native_reply> parse_native_response(
    wire_format f, std::string_view body, const std::string& model, diagnostics& diag
)
{
    bool ok = false;
    const auto o = parse_object(body, diag, ok);
    if (!ok)
        return make_error_code(errc::malformed_response);
    native_reply r;
    r.state.format = f;
    r.state.model = model;
    std::string why;
    if (f == wire_format::anthropic)
    {
        const auto* content = o.if_contains("content");
        if (!content || !content->is_array())
            return invalid(diag, "the response has no content");
        const json::value* block = nullptr;
        std::size_t blocks = 0;
        for (const auto& b : content->get_array())
            if (b.is_object() && str_of(b.get_object(), "type") == "compaction")
                block = (++blocks, &b);
        if (blocks != 1)
            return invalid(
                diag,
                "the response has " + std::to_string(blocks) + " compaction blocks; exactly one is required"
            );
        if (!valid_anthropic_block(*block, why))
            return invalid(diag, why);
        r.state.item = *block;
        r.readable = std::string(block->get_object().at("content").get_string());
        if (const auto* u = o.if_contains("usage"); u && u->is_object())
            r.usage = anthropic_native_usage(u->get_object());
        return r;
    }
    if (const auto* kind = o.if_contains("object");
        kind && kind->is_string() && kind->get_string() == "response")
    {
        auto kept = inline_output(o, diag);
        if (!kept)
            return kept.error();
        r.state.item = std::move(*kept);
        if (const auto* u = o.if_contains("usage"); u && u->is_object())
            r.usage = responses_usage(u->get_object());
        return r;
    }
    if (const auto* kind = o.if_contains("object");
        kind && (!kind->is_string() || kind->get_string() != "response.compaction"))
        return invalid(diag, "the response is not a response.compaction object");
    const auto* output = o.if_contains("output");
    if (!output)
        return invalid(diag, "the response has no output");
    if (!valid_openai_output(*output, why))
        return invalid(diag, why);
    r.state.item = *output;
    if (const auto* u = o.if_contains("usage"); u && u->is_object())
        r.usage = responses_usage(u->get_object());
    return r;
}

compaction::usage native_response_usage(wire_format f, std::string_view body)
{
    boost::system::error_code ec;
    const auto v = json::parse(body, ec);
    const auto* u = !ec && v.is_object() ? v.get_object().if_contains("usage") : nullptr;
    if (!u || !u->is_object())
        return {};
    return f == wire_format::anthropic ? anthropic_native_usage(u->get_object())
                                       : responses_usage(u->get_object());
}

void native_stream_accumulator::feed(std::string_view chunk)
{
    for (const auto& e : parser_.feed(chunk))
        if (!error_)
            on_event(e);
}

namespace {

// content_block_start: the block at its index, the list grown to hold it.
void start_block(const json::object& o, json::array& content)
{
    const auto i = int_of(o, "index");
    const auto* b = o.if_contains("content_block");
    if (i >= 0 && b && b->is_object())
    {
        if (content.size() <= static_cast<std::size_t>(i))
            content.resize(static_cast<std::size_t>(i) + 1);
        content[static_cast<std::size_t>(i)] = b->get_object();
    }
}

// content_block_delta: the delta applied to the block at its index, when there is one.
void apply_block_delta(const json::object& o, json::array& content)
{
    const auto i = int_of(o, "index");
    if (i < 0 || static_cast<std::size_t>(i) >= content.size() ||
        !content[static_cast<std::size_t>(i)].is_object())
        return;
    json::object& b = content[static_cast<std::size_t>(i)].get_object();
    const auto* d = o.if_contains("delta");
    if (!d || !d->is_object())
        return;
    const auto& delta = d->get_object();
    const std::string dt = str_of(delta, "type");
    if (dt == "compaction_delta")
    {
        // One delta carries the whole block; a second one appends its text.
        if (const auto* c = delta.if_contains("content"); c && c->is_string())
        {
            auto& cur = b["content"];
            cur = cur.is_string() ? json::value(std::string(cur.get_string()) + std::string(c->get_string()))
                                  : *c;
        }
        if (const auto* enc = delta.if_contains("encrypted_content"))
            b["encrypted_content"] = *enc;
    }
    else if (dt == "text_delta")
        b["text"] = str_of(b, "text") + str_of(delta, "text");
}

// message_delta: the stop reason, and the usage figures merged into the message's.
void apply_message_delta(const json::object& o, json::object& message)
{
    if (const auto* d = o.if_contains("delta"); d && d->is_object())
        if (const auto* r = d->get_object().if_contains("stop_reason"))
            message["stop_reason"] = *r;
    if (const auto* u = o.if_contains("usage"); u && u->is_object())
    {
        auto& cur = message["usage"];
        if (!cur.is_object())
            cur = json::object{};
        for (const auto& [k, val] : u->get_object())
            cur.get_object()[k] = val;
    }
}

}  // namespace

void native_stream_accumulator::on_event(const sse_parser::event& e)
{
    auto event = event_object(e, error_, error_diag_);
    if (!event)
        return;
    auto& o = *event;
    const std::string type = str_of(o, "type");
    if (type == "message_start")
    {
        if (auto* m = o.if_contains("message"); m && m->is_object())
            message_ = m->get_object();
    }
    else if (type == "content_block_start")
        start_block(o, content_);
    else if (type == "content_block_delta")
        apply_block_delta(o, content_);
    else if (type == "message_delta")
        apply_message_delta(o, message_);
    else if (type == "message_stop")
        complete_ = true;
}

std::string native_stream_accumulator::body() const
{
    json::object m = message_;
    m["content"] = content_;
    return compaction::stringify(m);
}

http_request build_count_request(const provider_config& cfg, const compaction::summary_prompt& prompt)
{
    http_request r = base_request(cfg);
    json::object body{{"model", cfg.model}};
    if (cfg.format == wire_format::anthropic)
    {
        r.url = anthropic_url(cfg, "/messages/count_tokens");
        body["system"] = prompt.system_prompt;
        body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt.prompt}}};
    }
    else
    {
        r.url = join_url(cfg.base_url, "/responses/input_tokens");
        body["instructions"] = prompt.system_prompt;
        body["input"] = json::array{json::object{{"role", "user"}, {"content", prompt.prompt}}};
    }
    add_auxiliary_call_fields(cfg, body);
    r.body = compaction::stringify(body);
    return r;
}

http_request build_native_count_request(const provider_config& cfg, const native_request& req)
{
    http_request r = base_request(cfg);
    const native_replay* previous = req.previous ? &*req.previous : nullptr;
    json::object body{{"model", req.model.empty() ? cfg.model : req.model}};
    if (cfg.format == wire_format::anthropic)
    {
        // The native request's own system, tools, tool_choice and thinking, and its messages
        // (a previous compaction block included: counting applies it, never triggers one).
        r.url = anthropic_url(cfg, "/messages/count_tokens");
        if (!req.system.empty())
            body["system"] = req.system;
        if (!req.tools.empty())
            body["tools"] = req.tools;
        if (!req.tool_choice.is_null())
            body["tool_choice"] = req.tool_choice;
        if (const auto* t = req.parameters.if_contains("thinking"))
            body["thinking"] = *t;
        body["messages"] = anthropic_native_messages(req, previous);
        r.headers.emplace_back("anthropic-beta", anthropic_betas(drop_unbound_thinking(body)));
    }
    else
    {
        r.url = join_url(cfg.base_url, "/responses/input_tokens");
        responses_native_body(req, previous, body);
    }
    add_auxiliary_call_fields(cfg, body);
    r.body = compaction::stringify(body);
    return r;
}

compaction::result<std::int64_t> parse_count_response(wire_format f, std::string_view body, diagnostics& diag)
{
    bool ok = false;
    const auto o = parse_object(body, diag, ok);
    if (!ok)
        return make_error_code(errc::malformed_response);
    if (f == wire_format::openai)
        if (const auto* kind = o.if_contains("object");
            !kind || !kind->is_string() || kind->get_string() != "response.input_tokens")
        {
            diag.message = "the count response is not a response.input_tokens object";
            return make_error_code(errc::malformed_response);
        }
    const auto* n = o.if_contains("input_tokens");
    if (!n || !(n->is_int64() || n->is_uint64()) || (n->is_int64() && n->get_int64() < 0))
    {
        diag.message = "the count response has no input_tokens count";
        return make_error_code(errc::malformed_response);
    }
    return int_of(o, "input_tokens");
}

http_request build_model_request(const provider_config& cfg, const std::string& model)
{
    http_request r = base_request(cfg);
    r.method = "GET";
    r.url = anthropic_url(cfg, "/models/" + model);
    return r;
}

compaction::result<bool> parse_model_compaction_support(std::string_view body, diagnostics& diag)
{
    bool ok = false;
    const auto o = parse_object(body, diag, ok);
    if (!ok)
        return compaction::result<bool>(
            boost::system::in_place_error, make_error_code(errc::malformed_response)
        );
    const json::object* cur = &o;
    const json::value* v = nullptr;
    for (const char* key : {"capabilities", "context_management", "compact_20260112", "supported"})
    {
        if (!cur || !(v = cur->if_contains(key)))
            return false;
        cur = v->is_object() ? &v->get_object() : nullptr;
    }
    return v->is_bool() && v->get_bool();
}

}  // namespace agentctx::providers
