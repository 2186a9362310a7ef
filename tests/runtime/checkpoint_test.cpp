// Portable checkpoints through the session: every compaction records its
// checkpoint fields; export -> restore into a copy; each rejection on its own crafted history
// leaves the file byte-identical; trigger settings do not invalidate a record.
#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include "controlled_store.hpp"
#include "session_text.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using compaction::checkpoint_reason;
using test::tokens;

namespace {

// A summarizer with another identity (and the offline one's output).
class named_summarizer final : public providers::summarizer
{
public:
    named_summarizer(asio::any_io_executor ex, std::string name) : inner_(ex), name_(std::move(name)) {}
    std::string name() const override { return name_; }

protected:
    void summarize_impl(
        compaction::summary_prompt prompt,
        asio::any_completion_handler<providers::summarize_signature> handler
    ) override
    {
        inner_.async_summarize(std::move(prompt), std::move(handler));
    }

private:
    providers::offline_summarizer inner_;
    std::string name_;
};

std::size_t line_count(const std::string& text)
{
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

json::object last_line(const std::string& text)
{
    const auto end = text.rfind('\n', text.size() - 2);
    return json::parse(text.substr(end + 1)).as_object();
}

class checkpoint_session_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("agentctx-ckpt-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // Ten turns of ~200 tokens each.
    static test::session_text history(std::size_t turns = 10)
    {
        test::session_text s;
        for (std::size_t i = 0; i < turns; ++i)
            s.user("u" + std::to_string(i), "turn " + std::to_string(i) + " " + tokens(100))
                .assistant(
                    "a" + std::to_string(i),
                    "answer " + std::to_string(i) + " " + tokens(100),
                    i + 1 == turns ? 2000 : 0
                );
        return s;
    }

    session_config config(std::int64_t keep = 400)
    {
        session_config c;
        c.settings.keep_recent_tokens = keep;
        c.model = {"anthropic", "claude-sonnet-4-5", 200000, 0};
        c.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
        return c;
    }

    fs::path write(const std::string& name, const std::string& text)
    {
        auto p = dir_ / name;
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }

    static std::string read(const fs::path& p)
    {
        std::ifstream f(p, std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }

    std::shared_ptr<session> open(const fs::path& p, session_config c)
    {
        compaction::diagnostics diag;
        auto store = jsonl_store::open(p, {}, diag);
        EXPECT_TRUE(store) << diag.message;
        auto s = session::open(ioc_.get_executor(), std::move(*store), std::move(c), diag);
        EXPECT_TRUE(s) << diag.message;
        return *s;
    }

    template <class Op>
    auto run(Op op)
    {
        ioc_.restart();
        auto r = op();
        ioc_.run();
        return r;
    }

    std::pair<error_code, compaction_outcome> compact(session& s)
    {
        std::pair<error_code, compaction_outcome> out;
        s.async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) { out = {ec, std::move(o)}; });
        ioc_.restart();
        ioc_.run();
        return out;
    }

    std::pair<error_code, checkpoint_outcome> export_checkpoint(session& s)
    {
        std::pair<error_code, checkpoint_outcome> out;
        s.async_export_checkpoint([&](error_code ec, checkpoint_outcome o) { out = {ec, std::move(o)}; });
        ioc_.restart();
        ioc_.run();
        return out;
    }

    std::pair<error_code, checkpoint_outcome> restore(session& s, json::value record)
    {
        std::pair<error_code, checkpoint_outcome> out;
        s.async_restore_checkpoint(std::move(record), [&](error_code ec, checkpoint_outcome o) {
            out = {ec, std::move(o)};
        });
        ioc_.restart();
        ioc_.run();
        return out;
    }

    // Compacts history() in its own file and exports the checkpoint.
    compaction::checkpoint_record original(std::vector<compaction::context_message>* context = nullptr)
    {
        auto p = write("original.jsonl", history().text);
        auto s = open(p, config());
        auto [ec, out] = compact(*s);
        EXPECT_FALSE(ec) << ec.message() << ": " << out.message;
        EXPECT_TRUE(out.compacted);
        auto [eec, exported] = export_checkpoint(*s);
        EXPECT_FALSE(eec) << eec.message() << ": " << exported.message;
        EXPECT_TRUE(exported.record.has_value());
        if (context)
            *context = s->context();
        return exported.record.value_or(compaction::checkpoint_record{});
    }

    // Restores `record` into a file holding `text`: expects a refusal for `why`, file unchanged.
    void expect_refused(
        const std::string& name,
        const std::string& text,
        json::value record,
        checkpoint_reason why,
        session_config c,
        compaction::errc code = compaction::errc::checkpoint_mismatch
    )
    {
        auto p = write(name, text);
        auto s = open(p, std::move(c));
        const auto before = read(p);
        const auto context_before = s->current();
        auto [ec, out] = restore(*s, std::move(record));
        EXPECT_EQ(ec, compaction::make_error_code(code)) << name << ": " << ec.message();
        EXPECT_EQ(out.reason, why) << name << ": " << compaction::to_string(out.reason) << " " << out.message;
        EXPECT_FALSE(out.message.empty());
        EXPECT_TRUE(out.entry_id.empty());
        EXPECT_EQ(read(p), before) << name << ": the file changed";
        EXPECT_EQ(s->current(), context_before) << name << ": the snapshot changed";
    }

    asio::io_context ioc_;
    fs::path dir_;
};

}  // namespace

TEST_F(checkpoint_session_test, every_compaction_records_source_revision_identity_and_config_digest)
{
    auto p = write("s.jsonl", history().text);
    auto s = open(p, config());
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    const auto line = last_line(read(p));
    ASSERT_EQ(line.at("type").as_string(), "compaction");
    const auto& ours = line.at("details").at("agentctx").as_object();
    const auto& rev = ours.at("sourceRevision").as_object();
    // Kept from u8: u0..a7 (16 entries) are covered.
    EXPECT_EQ(line.at("firstKeptEntryId").as_string(), "u8");
    EXPECT_EQ(rev.at("count").as_int64(), 16);
    EXPECT_EQ(rev.at("sha256").as_string().size(), 64u);
    EXPECT_EQ(ours.at("identity").as_object(), (json::object{{"provider", "offline"}, {"model", ""}}));
    EXPECT_EQ(ours.at("configDigest").as_string(), config_digest_of(config()));
    // The recorded hash is the one over the file's first 16 entry lines.
    const auto text = read(p);
    std::size_t pos = text.find('\n') + 1, end = pos;
    for (int k = 0; k < 16; ++k)
        end = text.find('\n', end) + 1;
    EXPECT_EQ(rev.at("sha256").as_string(), compaction::sha256_hex(text.substr(pos, end - pos)));
}

// The store refuses the restored entry: the store's failure, no entry id, the context unchanged.
TEST_F(checkpoint_session_test, a_restore_the_store_refuses_leaves_the_session_as_it_was)
{
    const auto record = original();
    auto control = std::make_shared<test::store_control>();
    auto st = std::make_unique<test::controlled_store>(history().text, control);
    const auto* stored = st.get();
    compaction::diagnostics diag;
    auto s = session::open(ioc_.get_executor(), std::move(st), config(), diag);
    ASSERT_TRUE(s) << diag.message;
    const auto before = stored->text();
    const auto context_before = (*s)->current();
    control->fail = true;
    auto [ec, out] = restore(**s, compaction::to_json(record));
    EXPECT_EQ(ec, make_error_code(errc::io_error)) << ec.message() << ": " << out.message;
    EXPECT_TRUE(out.entry_id.empty());
    EXPECT_EQ(out.message, "the test's store refuses writes");
    EXPECT_EQ(control->writes, 1u);
    EXPECT_EQ(stored->text(), before);
    EXPECT_EQ((*s)->current(), context_before);
}

TEST_F(checkpoint_session_test, export_then_restore_into_a_matching_copy_appends_one_compaction)
{
    std::vector<compaction::context_message> original_context;
    const auto record = original(&original_context);
    ASSERT_EQ(record.revision.count, 16u);

    // The copy holds the same history (another file, not compacted): restore reproduces the projection.
    auto p = write("copy.jsonl", history().text);
    auto s = open(p, config());
    const auto before = read(p);
    auto [ec, out] = restore(*s, compaction::to_json(record));
    ASSERT_FALSE(ec) << ec.message() << ": " << out.message;
    EXPECT_EQ(out.reason, checkpoint_reason::none);
    ASSERT_FALSE(out.entry_id.empty());
    const auto after = read(p);
    ASSERT_TRUE(after.starts_with(before));
    EXPECT_EQ(line_count(after), line_count(before) + 1);
    const auto line = last_line(after);
    EXPECT_EQ(line.at("type").as_string(), "compaction");
    EXPECT_EQ(line.at("id").as_string(), out.entry_id);
    EXPECT_EQ(line.at("parentId").as_string(), "a9");
    EXPECT_EQ(line.at("firstKeptEntryId").as_string(), "u8");
    EXPECT_EQ(line.at("summary").as_string(), record.summary);
    const auto& ours = line.at("details").at("agentctx").as_object();
    EXPECT_EQ(ours.at("restoredFrom").as_string(), record.digest);
    EXPECT_EQ(ours.at("reason").as_string(), "restore");
    EXPECT_EQ(ours.at("sourceRevision").at("count").as_int64(), 16);

    const auto ctx = s->context();
    ASSERT_EQ(ctx.size(), original_context.size());
    for (std::size_t i = 0; i < ctx.size(); ++i)
    {
        EXPECT_EQ(ctx[i].msg->role, original_context[i].msg->role) << i;
        EXPECT_EQ(
            compaction::content_text(ctx[i].msg->content),
            compaction::content_text(original_context[i].msg->content)
        ) << i;
        EXPECT_EQ(ctx[i].msg->summary, original_context[i].msg->summary) << i;
        if (ctx[i].msg->role != compaction::role::compaction_summary &&
            ctx[i].msg->role != compaction::role::system)
        {
            EXPECT_EQ(ctx[i].entry_id, original_context[i].entry_id) << i;
        }
    }
    // Reopened from disk, the projection is the same, and the restored compaction verifies.
    s.reset();
    auto again = open(p, config());
    EXPECT_EQ(again->context().size(), ctx.size());
    compaction::load_report report;
    compaction::diagnostics diag;
    auto log = compaction::session_log::load(after, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    auto rows = compaction::verify_compactions(*log, diag);
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].status, compaction::verify_status::ok);
}

TEST_F(checkpoint_session_test, a_copy_with_new_suffix_entries_accepts_the_record)
{
    std::vector<compaction::context_message> original_context;
    const auto record = original(&original_context);
    auto copy = history();
    copy.user("u10", "one more thing").assistant("a10", "done");
    auto p = write("copy.jsonl", copy.text);
    auto s = open(p, config());
    const auto before = read(p);
    auto [ec, out] = restore(*s, compaction::to_json(record));
    ASSERT_FALSE(ec) << out.message;
    EXPECT_EQ(line_count(read(p)), line_count(before) + 1);
    EXPECT_EQ(last_line(read(p)).at("firstKeptEntryId").as_string(), "u8");
    // The original's projection, then the new entries.
    EXPECT_EQ(s->context().size(), original_context.size() + 2);
    EXPECT_EQ(s->context().back().entry_id, "a10");
}

TEST_F(checkpoint_session_test, each_rejection_leaves_the_file_byte_identical)
{
    const auto record = original();
    const auto good = compaction::to_json(record);
    // Replaced: a covered entry edited in place, and one with another id.
    {
        auto t = history();
        const auto at = t.text.find("turn 3 ");
        ASSERT_NE(at, std::string::npos);
        t.text.replace(at, 6, "TURN 3");
        expect_refused("edited.jsonl", t.text, good, checkpoint_reason::replaced, config());
    }
    {
        test::session_text t;
        for (std::size_t i = 0; i < 10; ++i)
            t.user(i == 2 ? "x2" : "u" + std::to_string(i), "turn " + std::to_string(i) + " " + tokens(100))
                .assistant(
                    "a" + std::to_string(i),
                    "answer " + std::to_string(i) + " " + tokens(100),
                    i == 9 ? 2000 : 0
                );
        expect_refused("replaced.jsonl", t.text, good, checkpoint_reason::replaced, config());
    }
    // Shortened: the history ends inside the covered prefix.
    expect_refused("short.jsonl", history(5).text, good, checkpoint_reason::shortened, config());
    // Corrupt: a changed summary under the old digest.
    {
        auto bad = good;
        bad["summary"] = "## Goal\nsomething else";
        expect_refused(
            "corrupt.jsonl",
            history().text,
            bad,
            checkpoint_reason::corrupt,
            config(),
            compaction::errc::checkpoint_invalid
        );
        auto other = good;
        other["format"] = "agentctx-checkpoint-v9";
        expect_refused(
            "format.jsonl",
            history().text,
            other,
            checkpoint_reason::unsupported_format,
            config(),
            compaction::errc::checkpoint_invalid
        );
    }
    // Another summarizer identity.
    {
        auto c = config();
        c.summarizer = std::make_shared<named_summarizer>(ioc_.get_executor(), "openai:gpt-4.1");
        expect_refused(
            "identity.jsonl", history().text, good, checkpoint_reason::other_identity, std::move(c)
        );
    }
    // Changed summary settings: keepRecentTokens, the model's output limit, redaction.
    expect_refused("keep.jsonl", history().text, good, checkpoint_reason::other_configuration, config(800));
    {
        auto c = config();
        c.model.max_output_tokens = 4096;
        expect_refused(
            "output.jsonl", history().text, good, checkpoint_reason::other_configuration, std::move(c)
        );
    }
    {
        auto c = config();
        c.redaction.enabled = false;
        expect_refused(
            "redaction.jsonl", history().text, good, checkpoint_reason::other_configuration, std::move(c)
        );
    }
}

TEST_F(checkpoint_session_test, trigger_retry_and_reserve_settings_do_not_invalidate)
{
    const auto record = original();
    auto c = config();
    c.settings.enabled = false;
    c.settings.reserve_tokens = 1000;
    c.settings.retry.max_retries = 0;
    c.settings.retry.enabled = false;
    c.concurrent_summaries = true;
    auto p = write("copy.jsonl", history().text);
    auto s = open(p, std::move(c));
    auto [ec, out] = restore(*s, compaction::to_json(record));
    EXPECT_FALSE(ec) << ec.message() << ": " << out.message;
    EXPECT_FALSE(out.entry_id.empty());
}

TEST_F(checkpoint_session_test, export_without_a_compaction_is_a_named_error)
{
    auto p = write("s.jsonl", history().text);
    auto s = open(p, config());
    auto [ec, out] = export_checkpoint(*s);
    EXPECT_EQ(ec, compaction::make_error_code(compaction::errc::checkpoint_unavailable));
    EXPECT_EQ(out.reason, checkpoint_reason::no_compaction);
    // A Pi-written compaction has no record.
    auto t = history();
    t.compaction("c1", "u8", "S");
    auto p2 = write("pi.jsonl", t.text);
    auto s2 = open(p2, config());
    auto [ec2, out2] = export_checkpoint(*s2);
    EXPECT_EQ(ec2, compaction::make_error_code(compaction::errc::checkpoint_unavailable));
    EXPECT_EQ(out2.reason, checkpoint_reason::unrecorded);
}

TEST_F(checkpoint_session_test, restore_is_refused_while_a_compaction_runs)
{
    const auto record = original();
    auto c = config();
    c.summarizer =
        std::make_shared<providers::offline_summarizer>(ioc_.get_executor(), std::chrono::milliseconds(200));
    auto p = write("copy.jsonl", history().text);
    auto s = open(p, std::move(c));
    const auto before = read(p);
    std::pair<error_code, checkpoint_outcome> restored;
    bool compacted = false;
    s->async_compact(std::nullopt, [&](error_code, compaction_outcome) { compacted = true; });
    s->async_restore_checkpoint(compaction::to_json(record), [&](error_code ec, checkpoint_outcome o) {
        restored = {ec, std::move(o)};
    });
    ioc_.restart();
    ioc_.run();
    EXPECT_TRUE(compacted);
    EXPECT_EQ(restored.first, make_error_code(errc::compaction_running));
    // Only the compaction was written.
    EXPECT_EQ(line_count(read(p)), line_count(before) + 1);
}

TEST_F(checkpoint_session_test, status_reports_the_latest_compaction_against_this_configuration)
{
    auto p = write("s.jsonl", history().text);
    auto s = open(p, config());
    auto status = [&](session& on) {
        std::pair<error_code, checkpoint_status> out;
        on.async_checkpoint_status([&](error_code ec, checkpoint_status st) { out = {ec, std::move(st)}; });
        ioc_.restart();
        ioc_.run();
        return out;
    };
    auto [ec0, none] = status(*s);
    ASSERT_FALSE(ec0);
    EXPECT_FALSE(none.latest.has_value());
    EXPECT_EQ(none.config_digest, config_digest_of(config()));
    ASSERT_FALSE(compact(*s).first);
    auto [ec, st] = status(*s);
    ASSERT_FALSE(ec);
    ASSERT_TRUE(st.latest && st.recorded);
    EXPECT_EQ(st.latest->status, compaction::verify_status::ok);
    EXPECT_EQ(st.latest->covered, 16u);
    EXPECT_TRUE(st.restorable);
    // Under another keepRecentTokens a record of it would be refused.
    s.reset();
    auto other = open(p, config(800));
    auto [ec2, st2] = status(*other);
    ASSERT_FALSE(ec2);
    EXPECT_EQ(st2.latest->status, compaction::verify_status::ok);
    EXPECT_FALSE(st2.restorable);
}

TEST_F(checkpoint_session_test, the_host_supplies_the_checkpoint_identity_of_its_loop)
{
    const auto good = compaction::to_json(original());  // written under the summarizer's own identity
    auto c = config();
    int asked = 0;
    c.checkpoint_identity = [&asked] {
        ++asked;
        return compaction::checkpoint_identity{"anthropic", "claude-sonnet-4-5 (pinned)"};
    };
    auto p = write("s.jsonl", history().text);
    auto s = open(p, c);
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    EXPECT_GE(asked, 1);
    const auto line = last_line(read(p));
    const auto& ours = line.at("details").at("agentctx").as_object();
    EXPECT_EQ(
        ours.at("identity").as_object(),
        (json::object{{"provider", "anthropic"}, {"model", "claude-sonnet-4-5 (pinned)"}})
    );
    EXPECT_EQ(checkpoint_identity_of(c).model, "claude-sonnet-4-5 (pinned)");
    EXPECT_EQ(checkpoint_identity_of(c, true).provider, "hook");  // a hook's summary stays the hook's
    // The summarizer's own identity no longer fits: a record of it is refused by this session.
    s.reset();
    expect_refused("identity.jsonl", history().text, good, checkpoint_reason::other_identity, std::move(c));
}

namespace {

// A host's evidence store: keeps what it is given under a numbered key, or refuses.
struct evidence_store
{
    bool refuse = false;
    std::vector<std::string> ids;  ///< the entries it was last given
    std::size_t from = 99;
    std::string sha256;
    compaction_reason reason = compaction_reason::threshold;
    bool complete = true;  ///< every message entry came with its content

    preserve_evidence_fn callback()
    {
        return [this](const evidence_request& r) -> asio::awaitable<evidence_decision> {
            ids.clear();
            for (const auto& e : r.entries)
            {
                ids.push_back(e->id);
                complete = complete && (e->type != compaction::entry_type::message || e->message);
            }
            from = r.from;
            sha256 = r.sha256;
            reason = r.reason;
            if (refuse)
                co_return evidence_decision{.refuse = true, .reason = "the archive is read-only"};
            co_return evidence_decision{.references = {"archive://range-1", "mirror://range-1"}};
        };
    }
};

}  // namespace

TEST_F(checkpoint_session_test, preserve_evidence_gets_the_original_range_and_its_references_reach_the_record)
{
    evidence_store store;
    auto c = config();
    c.preserve_evidence = store.callback();
    auto p = write("s.jsonl", history().text);
    auto s = open(p, c);
    auto [ec, out] = compact(*s);
    ASSERT_FALSE(ec) << out.message;
    // Kept from u8: the range is u0..a7, complete, and its digest is over their 16 stored lines.
    ASSERT_EQ(store.ids.size(), 16u);
    EXPECT_EQ(store.ids.front(), "u0");
    EXPECT_EQ(store.ids.back(), "a7");
    EXPECT_TRUE(store.complete);
    EXPECT_EQ(store.from, 0u);
    EXPECT_EQ(store.reason, compaction_reason::manual);
    const auto text = read(p);
    std::size_t pos = text.find('\n') + 1, end = pos;
    for (int k = 0; k < 16; ++k)
        end = text.find('\n', end) + 1;
    EXPECT_EQ(store.sha256, compaction::sha256_hex(text.substr(pos, end - pos)));
    const auto line = last_line(text);
    const auto& ev = line.at("details").at("agentctx").at("evidenceRefs").as_array();
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(
        ev[0].as_object(),
        (json::object{{"ref", "archive://range-1"}, {"from", 0}, {"count", 16}, {"sha256", store.sha256}})
    );
    EXPECT_EQ(ev[1].at("ref").as_string(), "mirror://range-1");
    // The exported record carries the references; a copy restores it and keeps them.
    auto [eec, exported] = export_checkpoint(*s);
    ASSERT_FALSE(eec) << exported.message;
    ASSERT_EQ(exported.record->evidence.size(), 2u);
    EXPECT_EQ(compaction::to_json(*exported.record).at("evidenceRefs").as_array(), ev);
    auto copy = open(write("copy.jsonl", history().text), config());
    auto [rec, restored] = restore(*copy, compaction::to_json(*exported.record));
    ASSERT_FALSE(rec) << restored.message;
    EXPECT_EQ(
        last_line(read(dir_ / "copy.jsonl")).at("details").at("agentctx").at("evidenceRefs").as_array(), ev
    );
}

TEST_F(checkpoint_session_test, a_refusal_of_the_evidence_store_stops_the_compaction_and_writes_nothing)
{
    evidence_store store;
    store.refuse = true;
    auto c = config();
    c.preserve_evidence = store.callback();
    auto p = write("s.jsonl", history().text);
    auto s = open(p, c);
    const auto before = read(p);
    const auto snap = s->current();
    auto [ec, out] = compact(*s);
    EXPECT_EQ(ec, make_error_code(errc::evidence_refused)) << ec.message();
    EXPECT_NE(out.message.find("the archive is read-only"), std::string::npos) << out.message;
    EXPECT_FALSE(out.compacted);
    EXPECT_EQ(store.ids.size(), 16u);
    EXPECT_EQ(read(p), before);
    EXPECT_EQ(s->current(), snap);
}

TEST_F(checkpoint_session_test, restore_checks_each_evidence_range_against_the_copy)
{
    evidence_store store;
    auto c = config();
    c.preserve_evidence = store.callback();
    auto s = open(write("s.jsonl", history().text), c);
    ASSERT_FALSE(compact(*s).first);
    auto [eec, exported] = export_checkpoint(*s);
    ASSERT_FALSE(eec) << exported.message;
    // A record whose evidence names another range (its digest recomputed, so it parses).
    auto forged = *exported.record;
    forged.evidence[0].from = 2;
    forged.evidence[0].count = 4;
    forged.digest = compaction::record_digest(forged);
    expect_refused(
        "forged.jsonl",
        history().text,
        compaction::to_json(forged),
        checkpoint_reason::evidence_mismatch,
        config()
    );
    // A range past the covered prefix is not a well-formed record.
    auto outside = *exported.record;
    outside.evidence[0].from = 10;
    outside.evidence[0].count = 7;
    outside.digest = compaction::record_digest(outside);
    expect_refused(
        "outside.jsonl",
        history().text,
        compaction::to_json(outside),
        checkpoint_reason::corrupt,
        config(),
        compaction::errc::checkpoint_invalid
    );
}
