// A hostile provider: oversized bodies, gzip bombs, tiny SSE chunks and redirects are all bounded.
#include <agentctx/providers/http_summarizer.hpp>

#include "fake_provider_server.hpp"
#include "wire_format.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <zlib.h>

using namespace agentctx;
using namespace agentctx::providers;
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string gzip(const std::string& in)
{
    z_stream z{};
    EXPECT_EQ(
        deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK
    );  // +16: gzip wrapper
    std::string out(deflateBound(&z, static_cast<uLong>(in.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

struct fetched
{
    error_code ec;
    long status = 0;
    std::size_t delivered = 0;  // body bytes handed to on_data: what the client had to hold
    std::size_t body = 0;
};

class response_limits_test : public ::testing::Test
{
protected:
    fetched fetch(std::size_t cap)
    {
        http_client client(ioc_.get_executor());
        http_request r;
        r.url = server_.base_url() + "/v1/chat/completions";
        r.body = "{}";
        r.max_response_bytes = cap;
        fetched f;
        r.on_data = [&f](std::string_view chunk) { f.delivered += chunk.size(); };
        bool done = false;
        client.async_request(std::move(r), [&](error_code ec, http_response res) {
            f.ec = ec;
            f.status = res.status;
            f.body = res.body.size();
            done = true;
        });
        run_until([&] { return done; });
        EXPECT_EQ(client.live_transfers(), 0u);
        return f;
    }

    provider_config config(bool stream)
    {
        provider_config c;
        c.base_url = server_.base_url() + "/v1";
        c.model = "test-model";
        c.api_key = "sk-secret-KEY-12345";
        c.stream = stream;
        c.base_delay = std::chrono::milliseconds(10);
        return c;
    }

    std::pair<error_code, compaction::summary_output> summarize(http_summarizer& s)
    {
        std::pair<error_code, compaction::summary_output> r;
        bool done = false;
        s.async_summarize(
            compaction::summary_prompt{"SYS", "hi", 100},
            [&](error_code ec, compaction::summary_output out) {
                r = {ec, std::move(out)};
                done = true;
            }
        );
        run_until([&] { return done; });
        return r;
    }

    template <class Pred>
    void run_until(Pred p)
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        ioc_.restart();
        while (!p() && std::chrono::steady_clock::now() < end)
            ioc_.run_one_for(std::chrono::milliseconds(20));
        ASSERT_TRUE(p()) << "timed out";
    }

    test::fake_provider_server server_;
    asio::io_context ioc_{1};
};

}  // namespace

TEST_F(response_limits_test, an_announced_oversized_body_is_refused_before_it_is_read)
{
    server_.push({.body = std::string(8 << 20, 'x')});  // Content-Length: 8 MiB
    const auto f = fetch(256 << 10);
    EXPECT_EQ(f.ec, make_error_code(errc::response_too_large)) << f.ec.message();
    EXPECT_LE(f.delivered, std::size_t{256} << 10);
    EXPECT_LE(f.body, std::size_t{256} << 10);
}

TEST_F(response_limits_test, a_chunked_oversized_body_stops_at_the_cap)
{
    server_.push({.chunks = std::vector<std::string>(64, std::string(64 << 10, 'x'))});  // 4 MiB, no length
    const auto f = fetch(256 << 10);
    EXPECT_EQ(f.ec, make_error_code(errc::response_too_large)) << f.ec.message();
    EXPECT_LE(f.delivered, std::size_t{256} << 10);
    EXPECT_LE(f.body, std::size_t{256} << 10);
}

TEST_F(response_limits_test, a_gzip_bomb_is_stopped_after_decompressing_the_cap)
{
    const std::string bomb = gzip(std::string(64 << 20, '\0'));  // 64 MiB of zeros
    ASSERT_LT(bomb.size(), std::size_t{1} << 20);
    server_.push({.headers = {{"content-encoding", "gzip"}}, .body = bomb});
    const auto f = fetch(1 << 20);
    EXPECT_EQ(f.ec, make_error_code(errc::response_too_large)) << f.ec.message();
    EXPECT_LE(f.delivered, std::size_t{1} << 20);
    EXPECT_LE(f.body, std::size_t{1} << 20);
}

TEST_F(response_limits_test, a_small_gzip_body_is_decoded_and_the_summarizer_rejects_a_bomb)
{
    server_.push(
        {.headers = {{"content-encoding", "gzip"}}, .body = gzip(test::openai_body("## Goal\ncompressed"))}
    );
    server_.push({.headers = {{"content-encoding", "gzip"}}, .body = gzip(std::string(16 << 20, ' '))});
    auto c = config(false);
    c.max_response_bytes = 1 << 20;
    http_summarizer s(ioc_.get_executor(), c);
    auto ok = summarize(s);
    ASSERT_FALSE(ok.first) << ok.first.message();
    EXPECT_EQ(ok.second.text, "## Goal\ncompressed");
    auto bad = summarize(s);
    EXPECT_EQ(bad.first, make_error_code(errc::response_too_large));
    EXPECT_NE(s.last_failure().message.find("1048576 bytes"), std::string::npos) << s.last_failure().message;
    EXPECT_EQ(server_.requests().size(), 2u);  // never retried
}

TEST_F(response_limits_test, sse_in_many_tiny_chunks_parses_correctly)
{
    // The whole stream, cut into 1..7-byte pieces, one HTTP chunk each.
    std::string stream;
    for (const auto& c : test::openai_stream({"## Goal\n", "tiny ", "chunks ", std::string(3000, 'z')}))
        stream += c;
    std::vector<std::string> pieces;
    for (std::size_t i = 0, n = 1; i < stream.size(); i += n, n = n % 7 + 1)
        pieces.push_back(stream.substr(i, n));
    ASSERT_GT(pieces.size(), 800u);
    server_.push({.chunks = pieces});
    http_summarizer s(ioc_.get_executor(), config(true));
    auto r = summarize(s);
    ASSERT_FALSE(r.first) << r.first.message();
    EXPECT_EQ(r.second.text, "## Goal\ntiny chunks " + std::string(3000, 'z'));
    EXPECT_EQ(s.last_usage().total_tokens, 330);
}

TEST(sse_parser_limits, a_long_line_fed_byte_by_byte_is_one_event)
{
    // 512 KiB in one data line, one byte per feed: linear work (a rescan per byte was quadratic).
    const std::string payload(512 << 10, 'p');
    const std::string text = "event: big\ndata: " + payload + "\r\n\r\ndata: after\n\n";
    sse_parser p;
    std::vector<sse_parser::event> events;
    for (char ch : text)
        for (auto& e : p.feed(std::string_view(&ch, 1)))
            events.push_back(std::move(e));
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].name, "big");
    EXPECT_EQ(events[0].data.size(), payload.size());
    EXPECT_EQ(events[0].data, payload);
    EXPECT_EQ(events[1].name, "");
    EXPECT_EQ(events[1].data, "after");
}

TEST_F(response_limits_test, a_redirect_is_invalid_request_and_is_never_followed)
{
    for (int status : {301, 302, 307, 308})
    {
        SCOPED_TRACE(status);
        const auto seen = server_.requests().size();
        server_.push(
            {.status = status, .headers = {{"location", server_.base_url() + "/elsewhere"}}, .body = ""}
        );
        http_summarizer s(ioc_.get_executor(), config(false));
        auto r = summarize(s);
        EXPECT_EQ(r.first, make_error_code(errc::invalid_request)) << r.first.message();
        EXPECT_EQ(s.last_failure().http_status, status);
        EXPECT_NE(s.last_failure().message.find("redirect"), std::string::npos) << s.last_failure().message;
        const auto reqs = server_.requests();
        ASSERT_EQ(reqs.size(), seen + 1);  // exactly one request: the key went nowhere else
        EXPECT_EQ(reqs.back().target, "/v1/chat/completions");
    }
}

TEST_F(response_limits_test, cancellation_stops_delivery_at_the_next_chunk)
{
    server_.push({.chunks = std::vector<std::string>(64, std::string(64 << 10, 'x'))}
    );  // 4 MiB, as fast as it goes
    http_client client(ioc_.get_executor());
    http_request r;
    r.url = server_.base_url() + "/v1/chat/completions";
    r.body = "{}";
    asio::cancellation_signal sig;
    std::size_t chunks_before = 0, chunks_after = 0;
    bool emitted = false;
    r.on_data = [&](std::string_view) {
        if (emitted)
            ++chunks_after;
        else if (++chunks_before == 1)
        {
            emitted = true;
            sig.emit(asio::cancellation_type::terminal);  // mid-burst: the posted cancel runs later
        }
    };
    bool done = false;
    error_code got;
    client.async_request(
        std::move(r),
        asio::bind_cancellation_slot(
            sig.slot(),
            [&](error_code ec, http_response) {
                got = ec;
                done = true;
            }
        )
    );
    run_until([&] { return done; });
    EXPECT_EQ(got, asio::error::operation_aborted) << got.message();
    EXPECT_EQ(chunks_after, 0u);  // not one more chunk after the emission
    EXPECT_EQ(client.live_transfers(), 0u);
}

TEST(provider_settings, retry_wait_and_response_cap_from_the_settings_section)
{
    const auto section =
        boost::json::parse(R"({"name":"vllm","maxRetryWaitMs":5000,"maxResponseBytes":1024})").as_object();
    diagnostics diag;
    auto c = provider_from_environment(
        &section, [](const char*) -> const char* { return nullptr; }, diag
    );
    ASSERT_TRUE(c && *c) << diag.message;
    EXPECT_EQ((*c)->max_retry_wait, std::chrono::milliseconds(5000));
    EXPECT_EQ((*c)->max_response_bytes, 1024u);
    provider_config defaults;
    EXPECT_EQ(defaults.max_retry_wait, std::chrono::seconds(60));
    EXPECT_EQ(defaults.max_response_bytes, std::size_t{16} << 20);
}

TEST_F(response_limits_test, a_shared_body_is_sent_whole_each_time_and_replaces_body)
{
    http_client client(ioc_.get_executor());
    auto shared = std::make_shared<const std::string>("{\"payload\":\"" + std::string(100000, 'p') + "\"}");
    for (int i = 0; i < 3; ++i)
    {
        http_request r;
        r.url = server_.base_url() + "/v1/chat/completions";
        r.body = "{\"ignored\":true}";
        r.shared_body = shared;
        bool done = false;
        client.async_request(std::move(r), [&](error_code ec, http_response res) {
            EXPECT_FALSE(ec) << ec.message();
            EXPECT_EQ(res.status, 200);
            done = true;
        });
        run_until([&] { return done; });
    }
    const auto got = server_.requests();
    ASSERT_EQ(got.size(), 3u);
    for (const auto& r : got)
        EXPECT_EQ(r.body, *shared);
    EXPECT_EQ(shared.use_count(), 1);  // the transfers released it
}

// The client reuses finished curl handles and the last request's header list: nothing of one
// request (method, body, headers, response cap) may carry over into the next.
TEST_F(response_limits_test, a_reused_handle_carries_nothing_into_the_next_request)
{
    http_client client(ioc_.get_executor());
    auto send = [&](http_request r) {
        std::optional<std::pair<error_code, http_response>> got;
        client.async_request(std::move(r), [&](error_code ec, http_response res) {
            got.emplace(ec, std::move(res));
        });
        run_until([&] { return got.has_value(); });
        return *got;
    };
    http_request post;
    post.url = server_.base_url() + "/v1/chat/completions";
    post.headers = {{"x-first", "1"}, {"authorization", "Bearer k1"}};
    post.body = "{\"n\":1}";
    post.max_response_bytes = 10;  // the default reply is larger: refused
    EXPECT_EQ(send(post).first, make_error_code(errc::response_too_large));

    http_request same = post;  // same headers: the shared list
    same.max_response_bytes = std::size_t{1} << 20;
    same.body = "{\"n\":2}";
    EXPECT_FALSE(send(same).first);

    http_request get;
    get.method = "GET";
    get.url = server_.base_url() + "/v1/models/m";
    get.headers = {{"x-second", "2"}};
    const auto [ec, res] = send(get);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(res.status, 200);

    const auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 3u);
    EXPECT_EQ(reqs[0].method, "POST");
    EXPECT_EQ(reqs[1].body, "{\"n\":2}");
    EXPECT_EQ(reqs[1].header("x-first"), "1");
    EXPECT_EQ(reqs[1].header("authorization"), "Bearer k1");
    EXPECT_EQ(reqs[2].method, "GET");
    EXPECT_EQ(reqs[2].body, "");
    EXPECT_EQ(reqs[2].header("x-second"), "2");
    EXPECT_EQ(reqs[2].header("x-first"), "");
    EXPECT_EQ(reqs[2].header("authorization"), "");
    EXPECT_EQ(reqs[2].header("content-length"), "");
}
