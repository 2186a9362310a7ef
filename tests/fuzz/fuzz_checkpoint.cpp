// Checkpoint records: the strict parser on raw bytes, and records built from the bytes through
// to_json / parse_checkpoint_text / one mutated byte / check_checkpoint against a fixed session.
// Invariants: no crash or exception; a refused record names corrupt or unsupported_format with a
// message; a record we wrote parses back to the same canonical text; a mutated record is refused
// unless it still means the same record; check_checkpoint accepts only a record whose covered
// ids are a prefix of the session's path.
#include "fuzz_check.hpp"

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/session_log.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cx = agentctx::compaction;

namespace {

// Printable ASCII with the characters JSON must escape, so what we write is valid UTF-8.
std::string text(FuzzedDataProvider& in, std::size_t max)
{
    std::string s = in.ConsumeRandomLengthString(max);
    for (auto& c : s)
    {
        const auto u = static_cast<unsigned char>(c);
        c = u % 97 == 96 ? '\n' : static_cast<char>(' ' + u % 96);
    }
    return s;
}

std::vector<std::string> texts(FuzzedDataProvider& in)
{
    std::vector<std::string> v(in.ConsumeIntegralInRange<std::size_t>(0, 4));
    for (auto& s : v)
        s = text(in, 16);
    return v;
}

const cx::session_log& fixed_session()
{
    static const cx::session_log log = [] {
        const std::string t =
            R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})"
            "\n"
            R"({"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}})"
            "\n"
            R"({"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"more","timestamp":2}})"
            "\n"
            R"({"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"last","timestamp":3}})"
            "\n";
        cx::load_report report;
        cx::diagnostics diag;
        auto l = cx::session_log::load(t, {}, report, diag);
        FUZZ_CHECK(l.has_value(), "the fixed session loads: %s", diag.message.c_str());
        return std::move(*l);
    }();
    return log;
}

void raw_text(std::string_view bytes)
{
    cx::checkpoint_reason why = cx::checkpoint_reason::none;
    cx::diagnostics diag;
    auto r = cx::parse_checkpoint_text(bytes, why, diag);
    if (!r)
    {
        FUZZ_CHECK(
            why == cx::checkpoint_reason::corrupt || why == cx::checkpoint_reason::unsupported_format,
            "reason %s",
            cx::to_string(why)
        );
        FUZZ_CHECK(!diag.message.empty(), "a refusal explains itself");
        return;
    }
    FUZZ_CHECK(cx::record_digest(*r) == r->digest, "an accepted record's digest matches");
}

cx::checkpoint_record built(FuzzedDataProvider& in)
{
    cx::checkpoint_record r;
    r.session_id = text(in, 12);
    r.compaction_id = text(in, 12);
    r.created_at = text(in, 24);
    r.summary = text(in, 200);
    r.read_files = texts(in);
    r.modified_files = texts(in);
    r.first_kept_entry_id = text(in, 12);
    r.tokens_before = in.ConsumeIntegralInRange<std::int64_t>(0, 1'000'000'000);
    r.covered_ids = in.ConsumeBool() ? std::vector<std::string>{"aaaa0001", "aaaa0002"} : texts(in);
    if (r.covered_ids.empty())
        r.covered_ids.push_back(text(in, 12));  // a record covers at least one entry, and counts them
    r.revision = {r.covered_ids.size(), cx::sha256_hex(text(in, 8))};
    r.identity = {text(in, 10), text(in, 10)};
    r.config_digest = cx::sha256_hex(text(in, 8));
    r.digest = cx::record_digest(r);
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    raw_text(std::string_view(reinterpret_cast<const char*>(data), size));

    FuzzedDataProvider in(data, size);
    const auto rec = built(in);
    const std::string canonical = cx::stringify(cx::to_json(rec));
    cx::checkpoint_reason why = cx::checkpoint_reason::none;
    cx::diagnostics diag;
    auto back = cx::parse_checkpoint_text(canonical, why, diag);
    FUZZ_CHECK(
        back.has_value(), "a record we wrote parses: %s (%s)", diag.message.c_str(), canonical.c_str()
    );
    FUZZ_CHECK(cx::stringify(cx::to_json(*back)) == canonical, "round trip");

    // One byte changed: refused, unless it is still the same record.
    std::string mutated = canonical;
    const auto at = in.ConsumeIntegralInRange<std::size_t>(0, mutated.size() - 1);
    mutated[at] = static_cast<char>(in.ConsumeIntegral<std::uint8_t>());
    if (mutated != canonical)
        if (auto m = cx::parse_checkpoint_text(mutated, why, diag))
            FUZZ_CHECK(
                cx::stringify(cx::to_json(*m)) == canonical,
                "a mutation was accepted as another record: %s",
                mutated.c_str()
            );

    // Against a session: accepted only with its covered ids a prefix of the path.
    const auto& log = fixed_session();
    const auto path = log.active_path();
    cx::checkpoint_reason reason = cx::checkpoint_reason::none;
    if (cx::check_checkpoint(*back, log, path, back->identity, back->config_digest, reason, diag))
    {
        FUZZ_CHECK(back->covered_ids.size() <= path.size(), "covered beyond the path");
        for (std::size_t i = 0; i < back->covered_ids.size(); ++i)
            FUZZ_CHECK(log.meta(path[i]).id == back->covered_ids[i], "covered id %zu differs", i);
    }
    else
        FUZZ_CHECK(
            reason != cx::checkpoint_reason::none && !diag.message.empty(), "a refusal names its reason"
        );
    return 0;
}
