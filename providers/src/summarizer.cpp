// The summarizer interface: its vtable, and the answers of a summarizer without the optional capabilities.
#include <agentctx/providers/summarizer.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/blocking.hpp>
#include <boost/asio/prefer.hpp>

namespace agentctx::providers {

namespace asio = boost::asio;

namespace {

template <class Signature, class Value>
void post_not_supported(asio::any_completion_handler<Signature> handler, Value value)
{
    // On the handler's own associated executor, never inline (any_completion_executor offers
    // blocking.never as a preference, so post(ex, ...) does not accept it).
    auto ex = asio::prefer(asio::get_associated_executor(handler), asio::execution::blocking.never);
    ex.execute([h = std::move(handler), v = std::move(value)]() mutable {
        std::move(h)(make_error_code(errc::not_supported), std::move(v));
    });
}

}  // namespace

void summarizer::count_impl(compaction::summary_prompt, asio::any_completion_handler<count_signature> handler)
{
    post_not_supported(std::move(handler), std::int64_t{0});
}

void summarizer::count_native_impl(native_request, asio::any_completion_handler<count_signature> handler)
{
    post_not_supported(std::move(handler), std::int64_t{0});
}

void summarizer::native_impl(native_request, asio::any_completion_handler<native_signature> handler)
{
    native_reply r;
    r.failure_detail = "this summarizer offers no native compaction";
    post_not_supported(std::move(handler), std::move(r));
}

}  // namespace agentctx::providers
