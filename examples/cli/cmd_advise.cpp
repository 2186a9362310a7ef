// `agentctx advise --stdio`: the advisor of the Pi extension, one JSON request per line on stdin,
// one JSON answer per line on stdout (docs/pi-extension.md).
#include "advisor.hpp"
#include "cli_common.hpp"
#include "commands.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/settings.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

namespace agentctx::cli {

namespace {

const char* const advise_usage =
    "usage: agentctx advise --stdio\n"
    "\n"
    "The advisor of the Pi extension (examples/pi-extension): reads one JSON request per line on\n"
    "stdin and writes one JSON answer per line on stdout, until `shutdown` or the end of stdin.\n"
    "Requests: open, turn_end, summary, failed, compact, status, shutdown (docs/pi-extension.md).\n"
    "It reads the Pi session file and never writes it: Pi appends what the extension proposes.\n";

/// The longest request line read (a summary handed back is the longest).
constexpr std::size_t max_request_bytes = 16u * 1024u * 1024u;

boost::json::object error_of(std::string_view code, std::string message)
{
    return {{"error", boost::json::object{{"code", code}, {"message", std::move(message)}}}};
}

std::optional<std::string> string_field(const boost::json::object& o, std::string_view key)
{
    const auto* v = o.if_contains(key);
    if (!v || !v->is_string())
        return std::nullopt;
    return std::string(v->as_string());
}

// `cachePrices`: the prompt cache's write and read prices as multiples of the input price.
std::optional<compaction::price_table> cache_prices_of(const boost::json::value& v)
{
    const auto* o = v.if_object();
    const auto number = [&](const char* key) -> std::optional<double> {
        const auto* n = o ? o->if_contains(key) : nullptr;
        if (!n || !n->is_number())
            return std::nullopt;
        const double d = n->to_number<double>();
        return d >= 0 && d < 1e6 ? std::optional(d) : std::nullopt;
    };
    const auto write = number("write");
    const auto read = number("read");
    if (!write || !read || *read >= *write)
        return std::nullopt;
    compaction::price_table p;
    p.name = "model";
    p.write_multiplier = *write;
    p.read_multiplier = *read;
    return p;
}

// `open`: the session file, the agentctx settings object and the model's window.
boost::json::object open_advisor(const boost::json::object& req, std::unique_ptr<advisor>& out)
{
    const auto session = string_field(req, "session");
    if (!session || session->empty())
        return error_of("bad_request", "open needs \"session\": the Pi session file's path");
    advisor_config config;
    compaction::settings_layers layers;
    if (const auto* s = req.if_contains("settings"); s && !s->is_null())
    {
        if (!s->is_object())
            return error_of("invalid_settings", "\"settings\" must be an object ({\"compaction\": {...}})");
        layers.overrides = s->as_object();
    }
    for (const auto* key : {"contextWindow", "modelMaxTokens"})
        if (const auto* n = req.if_contains(key); n && (!n->is_int64() || n->as_int64() < 0))
            return error_of("bad_request", std::string("\"") + key + "\" must be a non-negative integer");
    if (const auto* n = req.if_contains("contextWindow"))
        config.context_window = n->as_int64();
    if (const auto* n = req.if_contains("modelMaxTokens"))
        config.model_max_tokens = n->as_int64();
    if (const auto* p = req.if_contains("cachePrices"); p && !p->is_null())
    {
        auto prices = cache_prices_of(*p);
        if (!prices)
            return error_of(
                "bad_request",
                "\"cachePrices\" must be {\"write\": number, \"read\": number}: non-negative multiples of "
                "the input price, read below write"
            );
        config.cache_prices = std::move(*prices);
    }
    compaction::diagnostics diag;
    auto resolved = compaction::resolve_settings(layers, diag, string_field(req, "model"));
    if (!resolved)
        return error_of("invalid_settings", diag.message);
    config.settings = std::move(*resolved);
    out = std::make_unique<advisor>(*session, std::move(config));
    auto answer = out->status();
    if (answer.contains("error"))
        out.reset();
    return answer;
}

boost::json::object dispatch(const boost::json::object& req, std::unique_ptr<advisor>& adv, bool& done)
{
    const auto op = string_field(req, "op");
    if (!op)
        return error_of("bad_request", "a request needs \"op\" (a string)");
    if (*op == "open")
        return open_advisor(req, adv);
    if (*op == "shutdown")
    {
        done = true;
        return {{"action", "none"}};
    }
    if (*op != "turn_end" && *op != "summary" && *op != "failed" && *op != "compact" && *op != "status")
        return error_of("unknown_op", "unknown op '" + *op + "'");
    if (!adv)
        return error_of("not_open", "'" + *op + "' before a successful open");
    if (*op == "turn_end")
        return adv->turn_end();
    if (*op == "status")
        return adv->status();
    if (*op == "compact")
        return adv->compact(
            string_field(req, "reason").value_or("manual"), string_field(req, "customInstructions")
        );
    const auto plan = string_field(req, "planId");
    if (!plan)
        return error_of("bad_request", "'" + *op + "' needs \"planId\"");
    if (*op == "failed")
        return adv->failed(*plan);
    const auto text = string_field(req, "summary");
    if (!text)
        return error_of("bad_request", "summary needs \"summary\" (the model's text)");
    const auto* usage = req.if_contains("usage");
    return adv->summary(*plan, *text, usage && usage->is_object() ? *usage : boost::json::value(nullptr));
}

// One request line's answer; never throws.
boost::json::object answer_line(
    const std::string& line, std::size_t n, std::unique_ptr<advisor>& adv, bool& done
)
{
    if (line.size() > max_request_bytes)
        return error_of("line_too_long", "request line " + std::to_string(n) + " is over 16 MiB");
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    if (ec || !v.is_object())
        return error_of("bad_json", "request line " + std::to_string(n) + " is not a JSON object");
    boost::json::object out;
    try
    {
        out = dispatch(v.as_object(), adv, done);
    }
    catch (const std::exception& e)
    {
        out = error_of("internal_error", std::string("request line ") + std::to_string(n) + ": " + e.what());
    }
    if (const auto* id = v.as_object().if_contains("id"))
        out["id"] = *id;
    if (const auto* op = v.as_object().if_contains("op"); op && op->is_string())
        out["op"] = *op;
    return out;
}

}  // namespace

int cmd_advise(int argc, char** argv)
{
    int code = exit_ok;
    std::string error;
    const auto a = parse_args(argc, argv, 2, {}, {"stdio", "help"}, error);
    if (a && a->has("help"))
    {
        std::fputs(advise_usage, stdout);
        return exit_ok;
    }
    if (!a || !a->has("stdio") || !a->positional.empty())
    {
        std::fprintf(
            stderr, "%s%s", error.empty() ? "" : ("agentctx advise: " + error + "\n").c_str(), advise_usage
        );
        return exit_usage;
    }
    std::unique_ptr<advisor> adv;
    bool done = false;
    std::string line;
    for (std::size_t n = 1; !done && std::getline(std::cin, line); ++n)
    {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        print_json(answer_line(line, n, adv, done));
        std::fflush(stdout);
    }
    return code;
}

}  // namespace agentctx::cli
