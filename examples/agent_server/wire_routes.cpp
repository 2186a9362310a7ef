// Provider-format input over HTTP: the body converted with from_wire_messages, appended as one batch.
#include "wire_routes.hpp"

#include "call_check.hpp"
#include "error_status.hpp"
#include "routes.hpp"

#include <agentctx/compaction/reserved.hpp>
#include <agentctx/providers/wire_input.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace agentctx::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

// The tool name of a call made in an earlier batch: the newest call with that id in context.
std::string earlier_call_name(const runtime::snapshot& snap, std::string_view call_id)
{
    for (std::size_t i = snap.messages.size(); i-- > 0;)
    {
        const auto& m = *snap.messages[i].msg;
        if (m.role != compaction::role::assistant)
            continue;
        for (const auto& b : m.content.blocks)
            if (const auto* call = std::get_if<compaction::tool_call_block>(&b); call && call->id == call_id)
                return call->name;
    }
    return {};
}

// A string field of the body, when present; "" in `why` unless it is present and not a string.
std::optional<std::string> string_field(const json::object& body, std::string_view key, std::string& why)
{
    const auto* v = body.if_contains(key);
    if (!v)
        return std::nullopt;
    if (!v->is_string())
    {
        why = std::string(key) + ": expected a string";
        return std::nullopt;
    }
    return std::string(v->get_string());
}

// The conversion options the body asks for, or the reason it cannot (a field path and why).
std::optional<providers::wire_input_options> options_of(
    const json::object& body, std::string_view items_key, const runtime::session& s, std::string& why
)
{
    for (const auto& kv : body)
        if (kv.key() != items_key && kv.key() != "usage" && kv.key() != "stop_reason" &&
            kv.key() != "provider" && kv.key() != "model" && kv.key() != "input_transformations" &&
            kv.key() != "coveredLeafId")
        {
            why = std::string(kv.key()) + ": unknown field";
            return std::nullopt;
        }
    providers::wire_input_options opt;
    if (const auto* u = body.if_contains("usage"))
        opt.usage = *u;
    if (const auto* t = body.if_contains("input_transformations"))
        opt.input_transformations = *t;
    opt.stop_reason = string_field(body, "stop_reason", why);
    // The serving model by default: the session's checks compare an assistant message's
    // provider and model with it (an overflow counts only for the model being served). `--compat
    // pi` keeps the configured model's budgets after a model_change, so it keeps its name too.
    const auto serving =
        s.config().compat == compaction::compat_mode::pi ? s.config().model : s.serving_model();
    opt.provider = string_field(body, "provider", why).value_or(serving.provider);
    opt.model = string_field(body, "model", why).value_or(serving.model_id);
    if (!why.empty())
        return std::nullopt;
    // Stamped now, and after the latest compaction even within its millisecond: a message not
    // newer than the compaction is one the session's checks skip as predating it.
    const auto snap = s.current();
    const auto now = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch()
    )
                                             .count());
    opt.timestamp = snap->compacted_at && now <= *snap->compacted_at ? *snap->compacted_at + 1 : now;
    opt.tool_name = [snap](std::string_view id) { return earlier_call_name(*snap, id); };
    return opt;
}

http_response invalid(const http_request& req, std::string_view why)
{
    return reply(req, http::status::bad_request, error_body("invalid_wire_message", why));
}

// 400 naming the field when a tool result or call of `converted` can never pair with the calls
// and results of its batch (find_unpairable): accepted, it would be unusable.
std::optional<http_response> unpairable_answer(
    const http_request& req,
    const std::vector<compaction::context_message>& context,
    const std::vector<json::object>& converted,
    const providers::wire_id_paths& paths
)
{
    std::vector<compaction::message> incoming;
    incoming.reserve(converted.size());
    for (const auto& o : converted)
    {
        compaction::diagnostics d;
        auto m = compaction::decode_message(o, "message", d);
        if (!m)
            return std::nullopt;  // the append refuses it, with its own reason
        incoming.push_back(std::move(*m));
    }
    const auto u = find_unpairable(context, incoming);
    if (!u)
        return std::nullopt;
    const auto& at = paths.at(u->message);
    const std::string field = at.at(u->call == unpairable::npos ? 0 : u->call);
    auto body = error_body("unpaired_tool_call", field + ": " + u->why);
    body["error"].as_object()["field"] = field;
    return reply(req, http::status::bad_request, std::move(body));
}

// 400 naming the first top-level field the runtime reserves (`agentctx*`), if the body has one.
std::optional<http_response> reserved_field_answer(const http_request& req, const json::object& body)
{
    for (const auto& kv : body)
        if (compaction::is_reserved_field(kv.key()))
        {
            auto answer = error_body(
                "reserved_field",
                std::string(kv.key()) +
                    ": reserved: top-level fields named 'agentctx*' are written only by the runtime"
            );
            answer["error"].as_object()["field"] = kv.key();
            return reply(req, http::status::bad_request, std::move(answer));
        }
    return std::nullopt;
}

/// The converted messages, and the provider's compaction item an appended Responses reply held.
struct wire_batch
{
    std::vector<json::object> messages;
    std::optional<providers::wire_compaction_item> compaction;
};
using converted_batch = std::variant<wire_batch, http_response>;

// The conversion itself, and the refusals it finds (as a 400 naming the field). A batch that can
// never pair against `context` (empty for a replacement: the batch is the whole conversation) is
// refused too.
converted_batch convert_items(
    const http_request& req,
    providers::input_format format,
    const json::value& items,
    const providers::wire_input_options& opt,
    std::string_view key,
    bool allow_empty,
    bool take_compaction,
    const std::vector<compaction::context_message>& context
)
{
    providers::diagnostics diag;
    providers::wire_id_paths paths;
    wire_batch out;
    auto converted = take_compaction
                         ? providers::from_wire_messages(format, items, opt, diag, paths, out.compaction)
                         : providers::from_wire_messages(format, items, opt, diag, paths);
    if (!converted)
        return invalid(req, diag.message);
    if (converted->empty() && !allow_empty)
        return invalid(req, std::string(key) + ": no messages");
    if (auto refused = unpairable_answer(req, context, *converted, paths))
        return std::move(*refused);
    out.messages = std::move(*converted);
    return out;
}

// The body's messages in the `format` query parameter's format, converted to Pi messages; or
// the 400 answer that names the field. `allow_empty`: an empty list is a list (a replacement).
// A large body (off_thread_body_bytes) is converted on the body worker, its items moved there.
asio::awaitable<converted_batch> converted_body(request_context& c, const lease& held, bool allow_empty)
{
    const auto name = query_param(c.req.target(), "format");
    const auto format = name ? providers::input_format_from_string(*name) : std::nullopt;
    if (!format)
        co_return reply(
            c.req,
            http::status::bad_request,
            error_body("invalid_request", "format must be openai, responses or anthropic")
        );
    const std::string_view key = *format == providers::input_format::responses ? "input" : "messages";
    if (auto refused = reserved_field_answer(c.req, c.body))
        co_return std::move(*refused);
    if (auto over = too_many_items(c.req, c.body, key, max_batch_items))
        co_return std::move(*over);
    std::string why;
    auto opt = options_of(c.body, key, held->session(), why);
    if (!opt)
        co_return invalid(c.req, why);
    auto* items = c.body.if_contains(key);
    if (!items)
        co_return invalid(c.req, std::string(key) + ": missing");
    // An append takes the provider's compaction item (OpenAI inline compaction), except under
    // `--compat pi`, whose views advertise no inline threshold; a replacement is the host's whole
    // transcript, where no reply carries one.
    const bool take_compaction =
        !allow_empty && held->session().config().compat != compaction::compat_mode::pi;
    // A replacement is the whole conversation; an append joins the context.
    auto context = allow_empty ? std::vector<compaction::context_message>()
                               : held->session().current()->messages.to_vector();
    if (c.req.body().size() <= off_thread_body_bytes && context.size() <= off_thread_context_messages)
        co_return convert_items(c.req, *format, *items, *opt, key, allow_empty, take_compaction, context);
    // What an answer needs of the request (its version and keep-alive), not its 16 MiB body.
    auto shape = std::make_shared<http_request>();
    shape->version(c.req.version());
    shape->keep_alive(c.req.keep_alive());
    auto work = [req = std::shared_ptr<const http_request>(std::move(shape)),
                 format = *format,
                 items = std::move(*items),
                 opt = std::move(*opt),
                 key = std::string(key),
                 allow_empty,
                 take_compaction,
                 context = std::move(context)]() -> asio::awaitable<converted_batch> {
        co_return convert_items(*req, format, items, opt, key, allow_empty, take_compaction, context);
    };
    co_return co_await asio::co_spawn(c.server.body_worker, std::move(work), asio::use_awaitable);
}

// Why a batch was refused: the library's reason, or what the code means when it gave none (the
// server stopping under the request).
std::string batch_refusal(
    const request_context& c, const boost::system::error_code& ec, const std::string& reason
)
{
    if (!reason.empty())
        return without_data_dir(reason, c.server.data_dir_prefix);
    return public_message(ec, compaction::diagnostics{});
}

// The new entries' ids, each counted as an append in the metrics.
json::array counted_appends(request_context& c, const std::vector<std::string>& new_ids)
{
    json::array ids;
    for (const auto& id : new_ids)
    {
        c.server.metrics.append();
        ids.emplace_back(id);
    }
    return ids;
}

// The provider's compaction item of an appended reply, adopted after the reply's messages
// (session::async_adopt_compaction): `{"adopted": true, "entryId"}`; `{"adopted": false,
// "reason": "hook_result", "entryId", "message"}` when a before_compact hook's result was
// committed instead of the item; or `{"adopted": false, "error", "message"}` (the messages stay
// appended; the session is as the append left it).
asio::awaitable<json::object> adopt_compaction(
    request_context& c,
    const lease& held,
    providers::wire_compaction_item item,
    const std::vector<std::string>& ids,
    std::optional<std::string> covered_leaf
)
{
    const auto& first_kept = ids.at(item.messages_before);
    auto [ec, out] = co_await held->session().async_adopt_compaction(
        std::move(item.item), first_kept, std::move(covered_leaf), asio::as_tuple(asio::use_awaitable)
    );
    if (!ec && out.compacted && out.adopted)
        co_return json::object{{"adopted", true}, {"entryId", out.entry_id}};
    if (!ec && out.compacted)  // committed, but not the provider's item
        co_return json::object{
            {"adopted", false},
            {"reason", out.not_adopted},
            {"entryId", out.entry_id},
            {"message", out.message}};
    const std::string why = out.message.empty() ? public_message(ec, compaction::diagnostics{})
                                                : without_data_dir(out.message, c.server.data_dir_prefix);
    co_return json::object{
        {"adopted", false}, {"error", ec ? ec.message() : std::string("not_compacted")}, {"message", why}};
}

}  // namespace

asio::awaitable<http_response> append_wire_messages(request_context& c, const lease& held)
{
    auto body = co_await converted_body(c, held, false);
    if (auto* refused = std::get_if<http_response>(&body))
        co_return std::move(*refused);
    auto batch = std::move(std::get<wire_batch>(body));
    // The `leafId` of the view the loop's request was built from: the provider's compaction
    // item covers the path up to it (entries appended since stay after the compaction).
    std::string why;
    auto covered_leaf = string_field(c.body, "coveredLeafId", why);
    if (!why.empty())
        co_return invalid(c.req, why);
    auto [ec, r] = co_await held->session().async_append_messages(
        std::move(batch.messages), asio::as_tuple(asio::use_awaitable)
    );
    if (ec)
        co_return reply(c.req, status_for(ec), error_body(ec.message(), batch_refusal(c, ec, r.reason)));
    json::object answer{{"ids", counted_appends(c, r.ids)}};
    if (batch.compaction)
        answer["compaction"] =
            co_await adopt_compaction(c, held, std::move(*batch.compaction), r.ids, std::move(covered_leaf));
    co_return reply(c.req, http::status::created, std::move(answer));
}

asio::awaitable<http_response> replace_wire_messages(request_context& c, const lease& held)
{
    if (c.body.contains("coveredLeafId"))  // a replacement carries no compaction item
        co_return invalid(c.req, "coveredLeafId: only with POST (an appended reply's compaction item)");
    auto body = co_await converted_body(c, held, true);
    if (auto* refused = std::get_if<http_response>(&body))
        co_return std::move(*refused);
    auto converted = std::move(std::get<wire_batch>(body).messages);
    auto [ec, r] = co_await held->session().async_replace_history(
        std::move(converted), asio::as_tuple(asio::use_awaitable)
    );
    if (ec)
        co_return reply(c.req, status_for(ec), error_body(ec.message(), batch_refusal(c, ec, r.reason)));
    json::array ids = counted_appends(c, r.ids);
    co_return reply(
        c.req,
        http::status::ok,
        json::object{
            {"changed", r.changed},
            {"shared", r.shared},
            {"forkId", r.fork_id.empty() ? json::value(nullptr) : json::value(r.fork_id)},
            {"oldLeafId", r.old_leaf_id.empty() ? json::value(nullptr) : json::value(r.old_leaf_id)},
            {"ids", std::move(ids)}}
    );
}

}  // namespace agentctx::server
