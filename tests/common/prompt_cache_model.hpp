// The prompt cache of the cost model, for a loopback fake provider: what a request reads and writes.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace agentctx::test {

/**
 * @brief A provider's prompt cache as the cost model defines it, at chars/4 tokens.
 *
 * A request is a sequence of parts, each `ceil(chars / 4)` tokens of its canonical JSON (a block's
 * `cache_control` left out). Anthropic Messages: the system blocks (a string is one text block),
 * each tool, then each message's content blocks (a string content is one text block), each tagged
 * with its message's role; a request caches only up to its last `cache_control` breakpoint (none:
 * it reads and writes nothing). Chat Completions: each message and each tool is a part, the whole
 * request is cacheable, and caches are separate per `prompt_cache_key`.
 *
 * At time `t`: the read P is the longest prefix, in whole parts, that an unexpired cached prefix
 * holds (limited to the cacheable part); P below `min_prefix` reads nothing. The cacheable part
 * minus P is written; it becomes a cached prefix expiring at `t + ttl`, and the prefixes that
 * served P are refreshed to `t + ttl`. Thread-safe (the fake's thread and the test's).
 */
class prompt_cache_model
{
public:
    struct billed
    {
        std::int64_t input = 0;    ///< tokens in the request
        std::int64_t read = 0;     ///< served from the cache
        std::int64_t written = 0;  ///< written to the cache
        std::int64_t uncached() const { return input - read - written; }
    };

    explicit prompt_cache_model(double ttl = 300, std::int64_t min_prefix = 1024)
        : ttl_(ttl), min_prefix_(min_prefix)
    {}

    billed anthropic(const boost::json::object& body, double t);
    billed openai(const boost::json::object& body, double t);

    /// A Messages reply body with the usage of `b` (`input_tokens` = the uncached tokens).
    static std::string anthropic_reply(
        const billed& b, const std::string& text, const std::string& stop = "end_turn", bool tool_use = false
    );
    /// A Chat Completions reply with `prompt_tokens` and `prompt_tokens_details.cached_tokens`.
    static std::string openai_reply(
        const billed& b, const std::string& text, const std::string& finish = "stop"
    );

private:
    struct part
    {
        std::string key;
        std::int64_t tokens = 0;
    };
    struct entry
    {
        std::string space;
        std::vector<std::string> keys;
        std::vector<std::int64_t> tokens;
        double expires = 0;
    };
    billed apply(const std::vector<part>& parts, std::size_t cacheable, const std::string& space, double t);

    double ttl_;
    std::int64_t min_prefix_;
    std::mutex mu_;
    std::vector<entry> entries_;
};

}  // namespace agentctx::test
