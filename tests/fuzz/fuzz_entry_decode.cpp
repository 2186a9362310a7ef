// Entry decoding: one session line (read as entries are materialized) through decode_header and
// decode_entry, then what consumes a decoded entry: projection, LLM conversion, the summarizer
// transcript, token estimates, timestamps. Invariants: no crash, no sanitizer report, no
// exception; a decode failure names a message; the raw object is kept byte for byte.
#include "fuzz_check.hpp"
#include "json/exact_json.hpp"
#include "json/line_indexer.hpp"

#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/llm_convert.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/serialize.hpp>
#include <agentctx/compaction/token_estimate.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace json = boost::json;
namespace cx = agentctx::compaction;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    boost::system::error_code ec;
    const auto fixed = cx::detail::replace_lone_surrogates(text);
    json::value v = cx::detail::parse_exact(fixed ? std::string_view(*fixed) : text, 65, ec);
    if (ec || !v.is_object())
        return 0;

    cx::diagnostics hd;
    if (auto h = cx::decode_header(v.get_object(), hd); !h)
        FUZZ_CHECK(!hd.message.empty(), "a header error without a message");
    else
        FUZZ_CHECK(h->raw == v.get_object(), "the header's raw object changed");

    const std::string before = cx::stringify(v);
    cx::diagnostics diag;
    auto e = cx::decode_entry(std::move(v.get_object()), diag);
    if (!e)
    {
        FUZZ_CHECK(!diag.message.empty(), "a decode error without a message");
        return 0;
    }
    FUZZ_CHECK(cx::stringify(e->raw) == before, "decode_entry changed the raw object");
    (void)cx::parse_iso_timestamp(e->timestamp);

    const auto msgs = cx::entry_messages(*e);
    for (const auto& m : msgs)
    {
        (void)cx::estimate_tokens(*m);
        (void)cx::content_text(m->content);
    }
    // The entry as a context edit of itself, when it is one (replacement content).
    (void)cx::project_entry(*e, e->type == cx::entry_type::context_edit ? &*e : nullptr);
    (void)cx::message_of_entry(*e, true);
    if (e->type == cx::entry_type::compaction)
        (void)cx::compaction_summary_message(*e);
    (void)cx::replay_system_messages(std::span<const std::shared_ptr<const cx::message>>(msgs));
    const auto llm = cx::convert_to_llm(msgs);
    (void)cx::serialize_conversation(llm);
    return 0;
}
