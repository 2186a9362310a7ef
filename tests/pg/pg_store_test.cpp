// pg_store against a real PostgreSQL: schema, exact export/import, append compare-and-set, the lease, NOTIFY.
#include "file_text.hpp"
#include "pg_store_fixture.hpp"
#include "pg_test_support.hpp"
#include "scripted_summarizer.hpp"
#include "session_text.hpp"

#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/runtime/checkpoint.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/jsonl_store.hpp>
#include <agentctx/runtime/session.hpp>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using namespace agentctx;
using namespace agentctx::runtime;
namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace json = boost::json;
using boost::system::error_code;

// The fixture is shared with the group-commit and re-sync suites.
class pg_store_test : public test::pg_store_fixture
{
protected:
    // Imports `text` through `node`, opens it there and loads its log; an empty log on failure.
    compaction::session_log import_and_load(pg_pool& node, const std::string& text)
    {
        auto [ec, id] = import(node, text);
        EXPECT_FALSE(ec) << id;
        auto st = ec ? nullptr : open_store(node, id);
        if (!st)
            return {};
        compaction::diagnostics diag;
        compaction::load_report report;
        auto log = st->load({}, report, diag);
        EXPECT_TRUE(log) << diag.message;
        return log ? std::move(*log) : compaction::session_log{};
    }
};

TEST_F(pg_store_test, import_then_export_round_trips_the_pi16_fixture_byte_for_byte)
{
    const std::string text =
        agentctx::test::read_text(fs::path(AGENTCTX_EXAMPLES_DIR) / "sessions/pi16-task.jsonl");
    ASSERT_FALSE(text.empty());
    auto [ec, id] = import(*node_a_, text);
    ASSERT_FALSE(ec) << id;
    auto [eec, out] = export_text(*node_b_, id);
    ASSERT_FALSE(eec) << out;
    EXPECT_EQ(out, text);
    auto [again, msg] = import(*node_a_, text);
    EXPECT_EQ(again, make_error_code(errc::already_exists)) << msg;
}

TEST_F(pg_store_test, export_equals_the_file_jsonl_store_writes_for_the_same_session)
{
    // The same header and entries written through both stores.
    const std::string id = test::unique_session_id("same");
    const std::string source = ten_turns(id);
    compaction::diagnostics diag;
    compaction::load_report report;
    auto log = compaction::session_log::load(source, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;

    const fs::path file = fs::temp_directory_path() / (id + ".jsonl");
    auto js = jsonl_store::create(file, log->header(), {}, diag);
    ASSERT_TRUE(js) << diag.message;
    std::optional<error_code> created;
    std::unique_ptr<pg_store> ps;
    node_a_->async_create(log->header(), [&](error_code ec, std::unique_ptr<pg_store> s, std::string m) {
        EXPECT_FALSE(ec) << m;
        ps = std::move(s);
        created = ec;
    });
    ASSERT_TRUE(test::run_until(ioc_, [&] { return created.has_value(); }));
    ASSERT_TRUE(ps);
    for (std::size_t i = 0; i < log->size(); ++i)
    {
        auto e = log->get(i, diag);
        ASSERT_TRUE(e) << diag.message;
        ASSERT_TRUE((*js)->append(**e, diag)) << diag.message;
        std::optional<error_code> w;
        ps->async_write(ioc_.get_executor(), *e, i, [&](error_code ec, std::string m) {
            EXPECT_FALSE(ec) << m;
            w = ec;
        });
        ASSERT_TRUE(test::run_until(ioc_, [&] { return w.has_value(); }));
    }
    js->reset();
    auto [ec, out] = export_text(*node_b_, id);
    ASSERT_FALSE(ec) << out;
    EXPECT_EQ(out, agentctx::test::read_text(file));
    fs::remove(file);
}

TEST_F(pg_store_test, a_concurrent_append_from_another_node_is_stale_then_the_retry_lands)
{
    const std::string id = test::unique_session_id("cas");
    ASSERT_FALSE(import(*node_a_, ten_turns(id)).first);
    // b does not LISTEN: it learns of a's entry only from its failed append.
    pg_pool quiet(ioc_.get_executor(), url_, {.listen = false});
    auto a = open_session(*node_a_, id);
    auto b = open_session(quiet, id);
    auto [ea, ida] = append(*a, user("from a"));
    ASSERT_FALSE(ea);
    auto [eb, idb] = append(*b, user("from b"));
    EXPECT_EQ(eb, make_error_code(errc::stale_leaf));
    EXPECT_EQ(b->current()->messages.size(), a->current()->messages.size()) << "b reloaded a's entry";
    auto [eb2, idb2] = append(*b, user("from b, retried"));
    EXPECT_FALSE(eb2) << eb2.message();

    auto [ec, out] = export_text(*node_a_, id);
    ASSERT_FALSE(ec);
    compaction::diagnostics diag;
    compaction::load_report report;
    auto log = compaction::session_log::load(out, {}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    ASSERT_EQ(log->size(), 22u) << "20 imported, a's, b's retry: nothing lost or doubled";
    EXPECT_EQ(log->meta(20).id, ida);
    EXPECT_EQ(log->meta(21).id, idb2);
    EXPECT_EQ(log->meta(log->meta(21).parent).id, ida) << "b's retry is a child of a's entry";
}

TEST_F(pg_store_test, the_lease_excludes_a_second_holder_until_released)
{
    const std::string id = test::unique_session_id("lease");
    ASSERT_FALSE(import(*node_a_, ten_turns(id)).first);
    auto sa = open_store(*node_a_, id);
    auto sb = open_store(*node_b_, id);
    auto lease = [&](pg_store& s) {
        std::optional<std::pair<error_code, std::shared_ptr<store_lease>>> r;
        s.async_lease(ioc_.get_executor(), [&](error_code ec, std::shared_ptr<store_lease> l, std::string) {
            r.emplace(ec, l);
        });
        EXPECT_TRUE(test::run_until(ioc_, [&] { return r.has_value(); }));
        return *r;
    };
    auto first = lease(*sa);
    ASSERT_FALSE(first.first);
    EXPECT_EQ(lease(*sb).first, make_error_code(errc::compaction_in_progress));
    first.second.reset();  // its connection closes: the server releases the lock
    // run_until asks its predicate once more at the end: once taken, do not lease again (the
    // lease just taken and dropped may still hold the lock while its connection closes).
    bool taken = false;
    ASSERT_TRUE(test::run_until(
        ioc_, [&] { return taken || (taken = !lease(*sb).first); }, std::chrono::seconds(10)
    ));
}

TEST_F(pg_store_test, concurrent_compactions_on_two_nodes_commit_exactly_one)
{
    const std::string id = test::unique_session_id("compact");
    ASSERT_FALSE(import(*node_a_, ten_turns(id)).first);
    auto a = open_session(*node_a_, id);
    auto b = open_session(*node_b_, id);
    summarizer_->push({.kind = test::script_step::succeed, .delay = std::chrono::milliseconds(300)});
    std::optional<std::pair<error_code, compaction_outcome>> ra, rb;
    a->async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
        ra.emplace(ec, std::move(o));
    });
    // b asks once a holds the lease (a's summarizer call has started).
    ASSERT_TRUE(test::run_until(ioc_, [&] { return summarizer_->calls() == 1; }));
    b->async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) {
        rb.emplace(ec, std::move(o));
    });
    ASSERT_TRUE(test::run_until(ioc_, [&] { return ra && rb; }));
    EXPECT_FALSE(ra->first) << ra->second.message;
    EXPECT_TRUE(ra->second.compacted);
    EXPECT_EQ(rb->first, make_error_code(errc::compaction_in_progress)) << rb->second.message;
    EXPECT_EQ(summarizer_->calls(), 1u) << "b failed fast, before summarizing";

    auto [ec, out] = export_text(*node_a_, id);
    ASSERT_FALSE(ec);
    std::size_t compactions = 0;
    for (std::size_t at = 0; (at = out.find("\"type\":\"compaction\"", at)) != std::string::npos; ++at)
        ++compactions;
    EXPECT_EQ(compactions, 1u);
    // b hears of it (NOTIFY), reloads and can compact again right after.
    ASSERT_TRUE(test::run_until(ioc_, [&] { return b->current()->compacted_at.has_value(); }));
    EXPECT_EQ(b->context().size(), a->context().size());
}

TEST_F(pg_store_test, a_checkpoint_restores_into_a_session_on_postgresql)
{
    // The record comes from a compaction on one session; a second session holds the same history.
    const std::string from = test::unique_session_id("ckpt-from");
    const std::string into = test::unique_session_id("ckpt-into");
    ASSERT_FALSE(import(*node_a_, ten_turns(from)).first);
    ASSERT_FALSE(import(*node_a_, ten_turns(into)).first);
    auto a = open_session(*node_a_, from);
    summarizer_->push({.kind = test::script_step::succeed});
    std::optional<std::pair<error_code, compaction_outcome>> compacted;
    a->async_compact(std::nullopt, [&](error_code ec, compaction_outcome o) { compacted.emplace(ec, o); });
    ASSERT_TRUE(test::run_until(ioc_, [&] { return compacted.has_value(); }));
    ASSERT_TRUE(compacted->second.compacted) << compacted->second.message;
    std::optional<std::pair<error_code, checkpoint_outcome>> exported;
    a->async_export_checkpoint([&](error_code ec, checkpoint_outcome o) {
        exported.emplace(ec, std::move(o));
    });
    ASSERT_TRUE(test::run_until(ioc_, [&] { return exported.has_value(); }));
    ASSERT_FALSE(exported->first) << exported->second.message;

    // The restore goes through the session's write path: the store's asynchronous write.
    auto b = open_session(*node_a_, into);
    std::optional<std::pair<error_code, checkpoint_outcome>> restored;
    b->async_restore_checkpoint(
        compaction::to_json(*exported->second.record),
        [&](error_code ec, checkpoint_outcome o) { restored.emplace(ec, std::move(o)); }
    );
    ASSERT_TRUE(test::run_until(ioc_, [&] { return restored.has_value(); }));
    ASSERT_FALSE(restored->first) << restored->second.message;
    ASSERT_FALSE(restored->second.entry_id.empty());
    EXPECT_EQ(b->context().size(), a->context().size());

    // Stored: the database holds the restored compaction as the session's last line.
    auto [ec, text] = export_text(*node_a_, into);
    ASSERT_FALSE(ec) << text;
    const auto last = text.rfind('\n', text.size() - 2);
    const auto line = text.substr(last + 1);
    EXPECT_NE(line.find("\"type\":\"compaction\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"id\":\"" + restored->second.entry_id + "\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"reason\":\"restore\""), std::string::npos) << line;
}

TEST_F(pg_store_test, other_nodes_sessions_follow_appends_through_notify)
{
    const std::string id = test::unique_session_id("notify");
    ASSERT_FALSE(import(*node_a_, ten_turns(id)).first);
    auto a = open_session(*node_a_, id);
    auto b = open_session(*node_b_, id);
    std::vector<remote_change_event> seen;
    b->on_event([&](const session_event& e) {
        if (const auto* r = std::get_if<remote_change_event>(&e))
            seen.push_back(*r);
    });
    const auto before = b->context().size();
    for (int i = 0; i < 3; ++i)
        ASSERT_FALSE(append(*a, user("n" + std::to_string(i))).first);
    ASSERT_TRUE(test::run_until(ioc_, [&] { return b->context().size() == before + 3; }));
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().entries, 23u);
    EXPECT_TRUE(seen.back().compactions.empty());
    // And b appends after them without a stale leaf.
    EXPECT_FALSE(append(*b, user("b follows")).first);
}

TEST_F(pg_store_test, open_of_an_unknown_session_is_not_found)
{
    std::optional<error_code> r;
    node_a_->async_open("no-such-session", [&](error_code ec, std::unique_ptr<pg_store>, std::string) {
        r = ec;
    });
    ASSERT_TRUE(test::run_until(ioc_, [&] { return r.has_value(); }));
    EXPECT_EQ(*r, make_error_code(errc::not_found));
}

TEST_F(pg_store_test, the_loaded_text_goes_to_the_log_so_the_session_holds_one_copy)
{
    const std::string text = ten_turns(test::unique_session_id("one-copy"));
    auto [ec, id] = import(*node_a_, text);
    ASSERT_FALSE(ec) << id;
    auto st = open_store(*node_a_, id);
    ASSERT_TRUE(st);
    compaction::diagnostics diag;
    compaction::load_report report;
    auto log = st->load({}, report, diag);
    ASSERT_TRUE(log) << diag.message;
    auto first = log->get(0, diag);  // read through the log's own copy of the text
    ASSERT_TRUE(first) << diag.message;
    EXPECT_EQ(
        (*first)->raw, compaction::session_log::load(text, {}, report, diag)->get(0, diag).value()->raw
    );
    // The store kept no copy: a second load has nothing to parse and says so.
    EXPECT_EQ(st->load({}, report, diag).error(), make_error_code(errc::io_error));
    EXPECT_NE(diag.message.find("loaded already"), std::string::npos) << diag.message;
    // And the log's copy is the spill file's, not the heap's, until the log goes.
    EXPECT_EQ(node_a_->stats().spilled_logs, 1u);
    EXPECT_EQ(node_a_->stats().spilled_bytes, text.size());
    log = compaction::session_log{};
    EXPECT_EQ(node_a_->stats().spilled_logs, 0u);
    EXPECT_EQ(node_a_->stats().spilled_bytes, 0u);
}

TEST_F(pg_store_test, without_spilling_the_log_reads_its_lines_from_memory)
{
    pg_pool_options opts;
    opts.spill_text = false;
    opts.listen = false;
    pg_pool node(ioc_.get_executor(), url_, opts);
    const std::string text = ten_turns(test::unique_session_id("in-memory"));
    auto log = import_and_load(node, text);
    ASSERT_GT(log.size(), 0u);
    compaction::diagnostics diag;
    compaction::load_report report;
    auto last = log.get(log.size() - 1, diag);
    ASSERT_TRUE(last) << diag.message;
    EXPECT_EQ(
        (*last)->raw,
        compaction::session_log::load(text, {}, report, diag)->get(log.size() - 1, diag).value()->raw
    );
    EXPECT_EQ(node.stats().spilled_logs, 0u);
    EXPECT_EQ(node.stats().spill_fallbacks, 0u);  // not a fallback: spilling is off
}

TEST_F(pg_store_test, an_unusable_spill_directory_keeps_the_text_in_memory_and_counts_it)
{
    pg_pool_options opts;
    opts.spill_directory = "/nonexistent/agentctx-spill";
    opts.listen = false;
    pg_pool node(ioc_.get_executor(), url_, opts);
    auto log = import_and_load(node, ten_turns(test::unique_session_id("no-spill")));
    ASSERT_GT(log.size(), 0u);
    compaction::diagnostics diag;
    EXPECT_TRUE(log.get(1, diag)) << diag.message;
    EXPECT_EQ(node.stats().spilled_logs, 0u);
    EXPECT_EQ(node.stats().spill_fallbacks, 1u);
}

TEST(pg_conninfo, passwords_never_reach_messages)
{
    // The store's messages name the conninfo only through redact_conninfo.
    EXPECT_EQ(redact_conninfo("postgresql://u:secret@h/db"), "postgresql://u:***@h/db");
    EXPECT_EQ(redact_conninfo("host=h password=secret user=u"), "host=h password=*** user=u");
    EXPECT_EQ(
        redact_conninfo("postgresql:///db?user=u&password=secret"), "postgresql:///db?user=u&password=***"
    );
    std::string c, s;
    ASSERT_TRUE(split_pg_reference("postgresql:///db?host=/tmp/x&user=u#sess-1", c, s));
    EXPECT_EQ(c, "postgresql:///db?host=/tmp/x&user=u");
    EXPECT_EQ(s, "sess-1");
    EXPECT_FALSE(split_pg_reference("/tmp/file.jsonl", c, s));
}

}  // namespace
