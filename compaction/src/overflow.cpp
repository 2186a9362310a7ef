// Overflow error text classification with Pi 1.6's pattern lists (case-insensitive).
#include <agentctx/compaction/overflow.hpp>

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

namespace agentctx::compaction {

namespace {

// RE2, not std::regex: libstdc++'s std::regex recurses per character, so a long provider error
// message overflowed the stack (found by fuzz_response: a 200 KB message crashed classify_error).
// RE2 runs in linear time and constant stack. The patterns use only syntax on which ECMAScript and
// RE2 agree; `\s` is spelled `[[:space:]]` (isspace in the C locale, as std::regex read it).
// Latin-1 matching is byte-wise, as std::regex was, with ASCII case folding for these patterns.
using pattern_list = std::vector<std::unique_ptr<const RE2>>;

const pattern_list& compile(std::initializer_list<const char*> patterns, pattern_list& out)
{
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_case_sensitive(false);
    o.set_log_errors(false);
    for (const char* p : patterns)
        out.push_back(std::make_unique<const RE2>(p, o));
    return out;
}

const pattern_list& overflow_patterns()
{
    static pattern_list v;
    static const auto& once = compile(
        {
            "prompt (?:is )?too long",
            "prompt exceeds max length",
            "exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\\d,]+ "
            "tokens?|[[:space:]]*\\([\\d,]+\\))",
            "context window exceeded",
            "exceeds (?:the )?maximum allowed input length of [\\d,]+ tokens?",
            "input \\(\\d+ tokens\\) is longer than the model'?s context length \\(\\d+ tokens\\)",
            "prompt has [\\d,]+ tokens?, but the configured context size is [\\d,]+ tokens?",
            "range of input length should be",
            "^(?:[\\w -]+ API error \\(413\\):|413(?:[[:space:]]|:|$))",
            "request_too_large",
            "input is too long for requested model",
            "exceeds the context window",
            "input token count[^\\n\\r]*exceeds the maximum",  // ECMAScript `.` stops at CR too
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

const pattern_list& non_overflow_patterns()
{
    static pattern_list v;
    static const auto& once =
        compile({"^(Throttling error|Service unavailable):", "rate limit", "too many requests"}, v);
    return once;
}

bool any(const pattern_list& patterns, std::string_view s)
{
    for (const auto& re : patterns)
        if (RE2::PartialMatch(re2::StringPiece(s.data(), s.size()), *re))
            return true;
    return false;
}

// Pi 1.6 (#9482): a bodyless 400/413 counts only for Cerebras.
const pattern_list& bodyless_patterns()
{
    static pattern_list v;
    static const auto& once =
        compile({"^4(?:00|13)[[:space:]]*(?:status code)?[[:space:]]*\\(no body\\)"}, v);
    return once;
}

}  // namespace

bool is_overflow_error_message(std::string_view error_message, std::string_view provider)
{
    if (any(non_overflow_patterns(), error_message))
        return false;
    return any(overflow_patterns(), error_message) ||
           (provider == "cerebras" && any(bodyless_patterns(), error_message));
}

}  // namespace agentctx::compaction
