// Overflow error text classification with Pi 1.6's pattern lists (case-insensitive).
#include <agentctx/compaction/overflow.hpp>

#include <regex>
#include <string>
#include <vector>

namespace agentctx::compaction {

namespace {

const std::vector<std::regex>& compile(std::initializer_list<const char*> patterns, std::vector<std::regex>& out)
{
    for (const char* p : patterns)
        out.emplace_back(p, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    return out;
}

const std::vector<std::regex>& overflow_patterns()
{
    static std::vector<std::regex> v;
    static const auto& once = compile(
        {
            "prompt (?:is )?too long",
            "prompt exceeds max length",
            "exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\\d,]+ tokens?|\\s*\\([\\d,]+\\))",
            "context window exceeded",
            "exceeds (?:the )?maximum allowed input length of [\\d,]+ tokens?",
            "input \\(\\d+ tokens\\) is longer than the model'?s context length \\(\\d+ tokens\\)",
            "prompt has [\\d,]+ tokens?, but the configured context size is [\\d,]+ tokens?",
            "range of input length should be",
            "^(?:[\\w -]+ API error \\(413\\):|413(?:\\s|:|$))",
            "request_too_large",
            "input is too long for requested model",
            "exceeds the context window",
            "input token count.*exceeds the maximum",
            "maximum prompt length is \\d+",
            "reduce the length of the messages",
            "maximum context length is \\d+ tokens",
            "exceeds the limit of \\d+",
            "exceeds the available context size",
            "greater than the context length",
            "context window exceeds limit",
            "exceeded model token limit",
            "too large for model with \\d+ maximum context length",
            "model_context_window_exceeded",
            "prompt too long; exceeded (?:max )?context length",
            "context[_ ]length[_ ]exceeded",
            "too many tokens",
            "token limit exceeded",
        },
        v
    );
    return once;
}

const std::vector<std::regex>& non_overflow_patterns()
{
    static std::vector<std::regex> v;
    static const auto& once = compile({"^(Throttling error|Service unavailable):", "rate limit", "too many requests"}, v);
    return once;
}

bool any(const std::vector<std::regex>& patterns, const std::string& s)
{
    for (const auto& re : patterns)
        if (std::regex_search(s, re))
            return true;
    return false;
}

// Pi 1.6 (#9482): a bodyless 400/413 counts only for Cerebras.
const std::vector<std::regex>& bodyless_patterns()
{
    static std::vector<std::regex> v;
    static const auto& once = compile({"^4(?:00|13)\\s*(?:status code)?\\s*\\(no body\\)"}, v);
    return once;
}

}  // namespace

bool is_overflow_error_message(std::string_view error_message, std::string_view provider)
{
    const std::string s(error_message);
    if (any(non_overflow_patterns(), s))
        return false;
    return any(overflow_patterns(), s) || (provider == "cerebras" && any(bodyless_patterns(), s));
}

}  // namespace agentctx::compaction
