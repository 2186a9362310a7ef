// Provider base URLs: endpoint paths go before the query; credentials never reach a log line.
#include <agentctx/providers/provider_url.hpp>
#include "wire_format.hpp"

#include <gtest/gtest.h>

using namespace agentctx::providers;

TEST(provider_url, the_path_is_joined_before_the_query)
{
    EXPECT_EQ(
        join_url("http://h/v1?api-key=K", "/chat/completions"), "http://h/v1/chat/completions?api-key=K"
    );
    EXPECT_EQ(
        join_url("http://h/v1/?api-key=K&x=1", "/chat/completions"),
        "http://h/v1/chat/completions?api-key=K&x=1"
    );
    EXPECT_EQ(join_url("http://h/v1//", "/chat/completions"), "http://h/v1/chat/completions");
    EXPECT_EQ(join_url("http://h/v1", "/chat/completions"), "http://h/v1/chat/completions");
    EXPECT_EQ(join_url("http://h/v1#frag", "/x"), "http://h/v1/x#frag");
    EXPECT_TRUE(url_path_ends_with("https://api.anthropic.com/v1/?k=v", "/v1"));
    EXPECT_FALSE(url_path_ends_with("https://api.anthropic.com?k=/v1", "/v1"));
}

TEST(provider_url, requests_built_from_a_base_with_a_query_keep_it_last)
{
    provider_config cfg;
    cfg.base_url = "http://h/v1?api-key=K";
    cfg.format = wire_format::openai;
    agentctx::compaction::summary_prompt p;
    p.system_prompt = "S";
    p.prompt = "P";
    EXPECT_EQ(build_request(cfg, p).url, "http://h/v1/chat/completions?api-key=K");
    cfg.format = wire_format::anthropic;
    EXPECT_EQ(build_request(cfg, p).url, "http://h/v1/messages?api-key=K");
    cfg.base_url = "http://h?api-key=K";
    EXPECT_EQ(build_request(cfg, p).url, "http://h/v1/messages?api-key=K");
}

TEST(provider_url, user_info_and_query_values_are_masked)
{
    EXPECT_EQ(mask_url("http://user:pass@host/v1?api-key=K"), "http://***@host/v1?api-key=***");
    EXPECT_EQ(mask_url("https://host:8443/v1?a=1&b&c=x=y#tok"), "https://host:8443/v1?a=***&b=***&c=***#***");
    EXPECT_EQ(mask_url("https://api.openai.com/v1"), "https://api.openai.com/v1");
    EXPECT_EQ(mask_url("http://us?er:p@ss@host/v1"), "http://***@host/v1");  // a bare '?' in the password
    EXPECT_EQ(mask_url("http://u:p@host"), "http://***@host");
    EXPECT_EQ(mask_url("host/v1?k=secret"), "host/v1?k=***");
}
