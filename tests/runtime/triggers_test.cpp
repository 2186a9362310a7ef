// Overflow classification: patterns, the non-overflow veto, silent and length-stop cases.
#include <agentctx/runtime/triggers.hpp>

#include <gtest/gtest.h>

using namespace agentctx;
using runtime::is_context_overflow;
using runtime::is_overflow_error_message;

TEST(triggers, overflow_patterns)
{
    for (const char* m :
         {"prompt is too long: 213462 tokens > 200000 maximum",
          "Error: request_too_large",
          "This model's maximum context length is 128000 tokens. However, you requested 130000",
          "Input token count 1048577 exceeds the maximum number of tokens allowed",
          "the request exceeds the available context size",
          "context_length_exceeded",
          "Context length exceeded",
          "model_context_window_exceeded",
          "413 status code (no body)",
          "PROMPT IS TOO LONG",
          "Prompt too long",
          "413 Request Entity Too Large",
          "Anthropic API error (413): request too big",
          "prompt exceeds max length",
          "This request exceeds the model's maximum context length of 131,072 tokens",
          "context window exceeded",
          "input (140000 tokens) is longer than the model's context length (131072 tokens)",
          "prompt has 9,000 tokens, but the configured context size is 8,192 tokens",
          "Range of input length should be [1, 30720]"})
        EXPECT_TRUE(is_overflow_error_message(m)) << m;
}

TEST(triggers, a_bodyless_400_counts_only_from_cerebras_delta_10_2)
{
    EXPECT_FALSE(is_overflow_error_message("400 status code (no body)", "openai"));
    EXPECT_TRUE(is_overflow_error_message("400 status code (no body)", "cerebras"));
    EXPECT_TRUE(is_overflow_error_message("413 status code (no body)", "openai"));  // any HTTP 413
}

TEST(triggers, non_overflow_patterns_veto)
{
    EXPECT_FALSE(is_overflow_error_message("Throttling error: too many tokens per minute"));
    EXPECT_FALSE(is_overflow_error_message("rate limit exceeded: too many tokens"));
    EXPECT_FALSE(is_overflow_error_message("Service unavailable: prompt is too long"));
    EXPECT_FALSE(is_overflow_error_message("529 overloaded"));
    EXPECT_FALSE(is_overflow_error_message("connection reset"));
}

TEST(triggers, silent_and_length_stop_overflow_need_the_window)
{
    compaction::message m;
    m.role = compaction::role::assistant;
    m.usage = compaction::usage{.input = 150000, .output = 10, .cache_read = 60000};
    m.stop_reason = compaction::stop_reason::stop;
    EXPECT_TRUE(is_context_overflow(m, 200000));   // 210000 > 200000
    EXPECT_FALSE(is_context_overflow(m, 0));       // no window, no silent-overflow rule
    EXPECT_FALSE(is_context_overflow(m, 210000));  // strict >
    m.stop_reason = compaction::stop_reason::length;
    m.usage->output = 0;
    m.usage->input = 138000;
    m.usage->cache_read = 60000;
    EXPECT_TRUE(is_context_overflow(m, 200000));  // 198000 >= 0.99 * 200000
    m.usage->input = 137999;
    EXPECT_FALSE(is_context_overflow(m, 200000));
    m.usage->input = 150000;
    m.usage->output = 5;
    EXPECT_FALSE(is_context_overflow(m, 200000));  // output was produced: a real length stop
    m.stop_reason = compaction::stop_reason::error;
    m.error_message = "prompt is too long";
    EXPECT_TRUE(is_context_overflow(m));
    m.error_message.reset();
    EXPECT_FALSE(is_context_overflow(m));
}
