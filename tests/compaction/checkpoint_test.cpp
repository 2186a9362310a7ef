// Portable checkpoints: SHA-256, sourceRevision, the record's digest and strict
// parse, each restore rejection reason, and verify.
#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/json_text.hpp>

#include "session_text.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace agentctx::compaction;
using agentctx::test::session_text;
namespace json = boost::json;

namespace {

const checkpoint_identity offline_identity{"offline", ""};

summary_config config_a()
{
    return summary_config{.keep_recent_tokens = 20000, .context_window = 200000, .max_output_tokens = 0};
}

// u1 a1 u2 a2 u3 a3: the compaction keeps from u3, so u1..a2 (4 entries) are covered.
session_text base()
{
    session_text t;
    t.user("u1", "Fix the CSV export").assistant("a1", "Looking at it").user("u2", "Keep the signature");
    t.assistant("a2", "Done with the tokenizer").user("u3", "Now the importer").assistant("a3", "On it");
    return t;
}

// The text of `t` with a compaction (keeping from `first_kept`) whose details carry the record.
session_text with_recorded_compaction(
    session_text t, std::string_view first_kept, const summary_config& cfg = config_a()
)
{
    auto log = t.load();
    diagnostics diag;
    const auto kept = log.find(first_kept);
    EXPECT_TRUE(kept.has_value());
    auto rev = compute_source_revision(log, entries_before(log, *kept), diag);
    EXPECT_TRUE(rev.has_value()) << diag.message;
    t.entry(
        "compaction",
        "c1",
        {{"summary", "## Goal\nFix the CSV export"},
         {"firstKeptEntryId", first_kept},
         {"tokensBefore", 1234},
         {"details",
          json::object{
              {"readFiles", json::array{"src/a.ts"}},
              {"modifiedFiles", json::array{"src/b.ts"}},
              {"agentctx",
               json::object{
                   {"reason", "manual"},
                   {"sourceRevision", to_json(*rev)},
                   {"identity", to_json(offline_identity)},
                   {"configDigest", config_digest(cfg)}}}}},
         {"fromHook", false}}
    );
    return t;
}

checkpoint_record export_latest(const session_text& t)
{
    auto log = t.load();
    checkpoint_reason why{};
    diagnostics diag;
    const auto c = latest_compaction(log);
    EXPECT_TRUE(c.has_value());
    auto r = make_checkpoint(log, *c, why, diag);
    EXPECT_TRUE(r.has_value()) << diag.message;
    return r ? *r : checkpoint_record{};
}

// check_checkpoint against `t`'s active path; returns the reason (none = accepted).
checkpoint_reason check(
    const checkpoint_record& r,
    const session_text& t,
    const checkpoint_identity& id = offline_identity,
    const summary_config& cfg = config_a()
)
{
    auto log = t.load();
    const auto path = log.active_path();
    checkpoint_reason why{};
    diagnostics diag;
    auto ok = check_checkpoint(r, log, path, id, config_digest(cfg), why, diag);
    EXPECT_EQ(ok.has_value(), why == checkpoint_reason::none) << diag.message;
    if (!ok)
    {
        EXPECT_EQ(ok.error(), make_error_code(errc::checkpoint_mismatch));
        EXPECT_FALSE(diag.message.empty());
    }
    return why;
}

std::string replace_once(std::string s, std::string_view from, std::string_view to)
{
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos)
        s.replace(at, from.size(), to);
    return s;
}

}  // namespace

TEST(Sha256, NistVectors)
{
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(
        sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
    EXPECT_EQ(
        sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrl"
                   "mnopqrsmnopqrstnopqrstu"),
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
    );
    EXPECT_EQ(
        sha256_hex(std::string(1000000, 'a')),
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    );
    // Padding edges: 55, 56 and 64 bytes.
    EXPECT_EQ(
        sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"
    );
    EXPECT_EQ(
        sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"
    );
    EXPECT_EQ(
        sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"
    );
}

TEST(Checkpoint, SourceRevisionHashesTheStoredLinesOfTheCoveredPrefix)
{
    auto t = with_recorded_compaction(base(), "u3");
    auto log = t.load();
    const auto c = latest_compaction(log);
    ASSERT_TRUE(c.has_value());
    const auto covered = covered_entries(log, *c);
    ASSERT_EQ(covered.size(), 4u);
    EXPECT_EQ(log.meta(covered[0]).id, "u1");
    EXPECT_EQ(log.meta(covered[3]).id, "a2");
    // The lines as stored, each with its newline: lines 2..5 of the file.
    std::string expected_bytes;
    std::size_t pos = t.text.find('\n') + 1;
    for (int k = 0; k < 4; ++k)
    {
        const auto end = t.text.find('\n', pos);
        expected_bytes += t.text.substr(pos, end - pos + 1);
        pos = end + 1;
    }
    diagnostics diag;
    auto rev = compute_source_revision(log, covered, diag);
    ASSERT_TRUE(rev.has_value()) << diag.message;
    EXPECT_EQ(rev->count, 4u);
    EXPECT_EQ(rev->sha256, sha256_hex(expected_bytes));
    // A retain-none compaction (firstKeptEntryId = its own id) covers everything before it.
    session_text none = base();
    none.compaction("c9", "c9", "S");
    auto l2 = none.load();
    EXPECT_EQ(covered_entries(l2, *latest_compaction(l2)).size(), 6u);
}

TEST(Checkpoint, ExportRoundTripsThroughStrictParse)
{
    const auto r = export_latest(with_recorded_compaction(base(), "u3"));
    EXPECT_EQ(r.compaction_id, "c1");
    EXPECT_EQ(r.session_id, "sess-1");
    EXPECT_EQ(r.summary, "## Goal\nFix the CSV export");
    EXPECT_EQ(r.read_files, std::vector<std::string>{"src/a.ts"});
    EXPECT_EQ(r.modified_files, std::vector<std::string>{"src/b.ts"});
    EXPECT_EQ(r.first_kept_entry_id, "u3");
    EXPECT_EQ(r.tokens_before, 1234);
    EXPECT_EQ(r.covered_ids, (std::vector<std::string>{"u1", "a1", "u2", "a2"}));
    EXPECT_EQ(r.revision.count, 4u);
    EXPECT_EQ(r.identity, offline_identity);
    EXPECT_EQ(r.config_digest, config_digest(config_a()));
    EXPECT_EQ(r.digest, record_digest(r));
    const auto text = stringify(to_json(r));
    EXPECT_TRUE(text.starts_with(R"({"format":"agentctx-checkpoint-v1","source":{"sessionId":"sess-1")"))
        << text;
    checkpoint_reason why{};
    diagnostics diag;
    auto back = parse_checkpoint_text(text, why, diag);
    ASSERT_TRUE(back.has_value()) << diag.message;
    EXPECT_EQ(why, checkpoint_reason::none);
    EXPECT_EQ(stringify(to_json(*back)), text);
    // Pretty-printed or reordered JSON is the same record: the digest is over the canonical form.
    json::object reordered = to_json(r);
    auto digest = reordered["digest"];
    reordered.erase("digest");
    json::object first{{"digest", digest}};
    for (auto& kv : reordered)
        first[kv.key()] = kv.value();
    EXPECT_TRUE(parse_checkpoint(json::value(first), why, diag).has_value()) << diag.message;
}

TEST(Checkpoint, ParseRejectsWithNamedErrors)
{
    const auto r = export_latest(with_recorded_compaction(base(), "u3"));
    auto parse = [](const json::object& o, checkpoint_reason& why, diagnostics& diag) {
        return parse_checkpoint(json::value(o), why, diag);
    };
    checkpoint_reason why{};
    diagnostics diag;
    {
        auto o = to_json(r);
        o["format"] = "agentctx-checkpoint-v2";
        auto p = parse(o, why, diag);
        ASSERT_FALSE(p);
        EXPECT_EQ(p.error(), make_error_code(errc::checkpoint_invalid));
        EXPECT_EQ(why, checkpoint_reason::unsupported_format);
        EXPECT_STREQ(to_string(why), "unsupported_format");
    }
    {
        auto o = to_json(r);
        o.erase("configDigest");
        diag.clear();
        auto p = parse(o, why, diag);
        ASSERT_FALSE(p);
        EXPECT_EQ(why, checkpoint_reason::corrupt);
        EXPECT_EQ(diag.field, "configDigest");
    }
    {
        auto o = to_json(r);
        o["extra"] = 1;
        diag.clear();
        ASSERT_FALSE(parse(o, why, diag));
        EXPECT_EQ(diag.field, "extra");
    }
    {
        auto o = to_json(r);
        o["sourceRevision"].get_object()["count"] = 3;
        diag.clear();
        ASSERT_FALSE(parse(o, why, diag));
        EXPECT_EQ(diag.field, "sourceRevision.count");
    }
    {
        // A changed summary without a new digest: corrupt.
        auto o = to_json(r);
        o["summary"] = "## Goal\nSomething else";
        diag.clear();
        auto p = parse(o, why, diag);
        ASSERT_FALSE(p);
        EXPECT_EQ(why, checkpoint_reason::corrupt);
        EXPECT_EQ(diag.field, "digest");
        EXPECT_STREQ(to_string(why), "corrupt");
    }
    {
        diag.clear();
        auto p = parse_checkpoint_text("{\"format\":", why, diag);
        ASSERT_FALSE(p);
        EXPECT_EQ(why, checkpoint_reason::corrupt);
    }
}

TEST(Checkpoint, AcceptedWhenTheWholeCoveredPrefixMatchesWithAnyNewSuffix)
{
    const auto r = export_latest(with_recorded_compaction(base(), "u3"));
    // The copy: the same history without the compaction, plus new entries.
    auto copy = base();
    copy.user("u4", "And the tests").assistant("a4", "Added");
    EXPECT_EQ(check(r, copy), checkpoint_reason::none);
    // Exactly the covered prefix and nothing more is fine too.
    session_text just;
    just.user("u1", "Fix the CSV export").assistant("a1", "Looking at it").user("u2", "Keep the signature");
    just.assistant("a2", "Done with the tokenizer");
    EXPECT_EQ(check(r, just), checkpoint_reason::none);
}

TEST(Checkpoint, EachRejectionReason)
{
    const auto r = export_latest(with_recorded_compaction(base(), "u3"));
    // Shortened: the history ends inside the covered prefix.
    session_text shorter;
    shorter.user("u1", "Fix the CSV export")
        .assistant("a1", "Looking at it")
        .user("u2", "Keep the signature");
    EXPECT_EQ(check(r, shorter), checkpoint_reason::shortened);
    // Replaced: another entry (another id) at a covered position.
    session_text other;
    other.user("u1", "Fix the CSV export").assistant("aX", "Looking at it").user("u2", "Keep the signature");
    other.assistant("a2", "Done with the tokenizer").user("u3", "Now the importer");
    EXPECT_EQ(check(r, other), checkpoint_reason::replaced);
    // Replaced: same ids, one covered entry edited in place.
    auto edited = base();
    edited.text = replace_once(edited.text, "Keep the signature", "Change the signature");
    EXPECT_EQ(check(r, edited), checkpoint_reason::replaced);
    // Other identity, other configuration.
    EXPECT_EQ(check(r, base(), {"openai", "gpt-4.1"}), checkpoint_reason::other_identity);
    auto cfg = config_a();
    cfg.keep_recent_tokens = 10000;
    EXPECT_EQ(check(r, base(), offline_identity, cfg), checkpoint_reason::other_configuration);
    cfg = config_a();
    cfg.redaction_allowlist = {"sk-test-.*"};
    EXPECT_EQ(check(r, base(), offline_identity, cfg), checkpoint_reason::other_configuration);
}

TEST(Checkpoint, ConfigDigestCoversTheSummaryInputsOnly)
{
    const auto a = config_digest(config_a());
    EXPECT_EQ(a.size(), 64u);
    EXPECT_EQ(a, config_digest(config_a()));
    auto b = config_a();
    b.context_window = 100000;
    EXPECT_NE(config_digest(b), a);
    b = config_a();
    b.max_output_tokens = 8192;
    EXPECT_NE(config_digest(b), a);
    b = config_a();
    b.redaction_enabled = false;
    EXPECT_NE(config_digest(b), a);
    const auto input = stringify(summary_config_json(config_a()));
    EXPECT_NE(input.find("\"prompts\":{\"system\":"), std::string::npos);
    EXPECT_EQ(input.find("reserveTokens"), std::string::npos);
    EXPECT_EQ(input.find("enabled\":true,\"reserve"), std::string::npos);
}

TEST(Checkpoint, ExportRefusesUnrecordedAndChangedHistories)
{
    checkpoint_reason why{};
    diagnostics diag;
    {
        auto t = base();
        t.compaction("c1", "u3", "S");  // as Pi writes it: no agentctx fields
        auto log = t.load();
        auto r = make_checkpoint(log, *latest_compaction(log), why, diag);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(errc::checkpoint_unavailable));
        EXPECT_EQ(why, checkpoint_reason::unrecorded);
    }
    {
        auto t = with_recorded_compaction(base(), "u3");
        t.text = replace_once(t.text, "Looking at it", "Looking at it again");
        auto log = t.load();
        auto r = make_checkpoint(log, *latest_compaction(log), why, diag);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(errc::checkpoint_mismatch));
        EXPECT_EQ(why, checkpoint_reason::replaced);
    }
    EXPECT_FALSE(latest_compaction(base().load()).has_value());
}

TEST(Checkpoint, VerifyReportsEveryCompaction)
{
    auto t = with_recorded_compaction(base(), "u3");
    t.user("u4", "More").assistant("a4", "Sure");
    t.compaction("c2", "u4", "S2");  // unrecorded
    diagnostics diag;
    {
        auto rows = verify_compactions(t.load(), diag);
        ASSERT_TRUE(rows.has_value()) << diag.message;
        ASSERT_EQ(rows->size(), 2u);
        EXPECT_EQ((*rows)[0].id, "c1");
        EXPECT_EQ((*rows)[0].status, verify_status::ok);
        EXPECT_EQ((*rows)[0].covered, 4u);
        EXPECT_EQ((*rows)[1].status, verify_status::unrecorded);
        EXPECT_EQ((*rows)[1].covered, 7u);  // u1..a3, c1: everything before u4
    }
    t.text = replace_once(t.text, "Done with the tokenizer", "Done with the regex");
    auto rows = verify_compactions(t.load(), diag);
    ASSERT_TRUE(rows.has_value());
    EXPECT_EQ((*rows)[0].status, verify_status::changed);
    EXPECT_STREQ(to_string((*rows)[0].status), "changed");
    EXPECT_NE((*rows)[0].actual.sha256, (*rows)[0].recorded->sha256);
}

TEST(Checkpoint, AppendedEntriesHashAsTheLineTheStoreWrites)
{
    // An entry appended in memory hashes as JSON.stringify of its raw object: the stored line.
    auto t = base();
    auto log = t.load();
    diagnostics diag;
    json::object raw{
        {"type", "message"},
        {"id", "u9"},
        {"parentId", "a3"},
        {"timestamp", "2026-01-15T10:00:00.000Z"},
        {"message", json::object{{"role", "user"}, {"content", "late"}, {"timestamp", 1}}}};
    auto e = decode_entry(raw, diag);
    ASSERT_TRUE(e.has_value()) << diag.message;
    ASSERT_TRUE(log.append(std::make_shared<const entry>(std::move(*e)), diag));
    auto appended = compute_source_revision(log, log.active_path(), diag);
    t.raw(stringify(raw));
    auto reread = t.load();
    auto from_file = compute_source_revision(reread, reread.active_path(), diag);
    ASSERT_TRUE(appended && from_file);
    EXPECT_EQ(*appended, *from_file);
}

TEST(Checkpoint, RevisionCacheHashesLikeTheUncachedFunctionOnLongerPrefixesAndBranches)
{
    auto t = base();
    t.user("u4", "More").assistant("a4", "Sure");
    t.user("b1", "On a branch", "a2").assistant("b2", "Branch answer");  // forks after a2
    auto log = t.load();
    source_revision_cache cache;
    diagnostics diag;
    auto check = [&](std::string_view last) {
        const auto path = log.path_to(*log.find(last));
        for (std::size_t n : {path.size(), path.size() / 2, path.size()})
        {
            const std::span<const std::uint32_t> prefix(path.data(), n);
            auto cached = cache.compute(log, prefix, diag);
            auto plain = compute_source_revision(log, prefix, diag);
            ASSERT_TRUE(cached && plain) << diag.message;
            EXPECT_EQ(*cached, *plain) << last << " " << n;
        }
    };
    check("a3");
    check("a4");  // extends a3's path
    check("b2");  // shares u1..a2 only
    check("a4");
    check("u2");
}
