// The tool-result clearing and the host's evidence store: asked first, a refusal pauses, references reach the
// checkpoint.
#include <agentctx/compaction/checkpoint.hpp>
#include <agentctx/compaction/error.hpp>
#include <agentctx/compaction/json_text.hpp>
#include <agentctx/providers/offline_summarizer.hpp>
#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/session.hpp>

#include "append_entry.hpp"
#include "clearing_messages.hpp"
#include "file_text.hpp"
#include "open_session.hpp"
#include "run_until.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace agentctx;
namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
using boost::system::error_code;
using runtime::evidence_decision;
using runtime::evidence_kind;
using runtime::evidence_request;

namespace {

using test::clearing::assistant;
using test::clearing::message;
using test::clearing::result;

json::object call(const std::string& id)
{
    return {
        {"type", "toolCall"},
        {"id", id},
        {"name", "read"},
        {"arguments", json::object{{"path", "src/" + id + ".cpp"}}}};
}

// The host's evidence store: records each request, answers as told.
struct evidence_store
{
    enum class answer
    {
        keep,
        refuse,
        throw_,
        no_reference,
        wait
    };
    answer mode = answer::keep;
    struct asked
    {
        evidence_kind kind;
        std::vector<std::string> ids;
        std::vector<std::size_t> text_sizes;  ///< each entry's first content block, as given
        std::size_t from = 0;
        std::string sha256;
    };
    std::vector<asked> requests;

    runtime::preserve_evidence_fn callback()
    {
        return [this](const evidence_request& r) -> asio::awaitable<evidence_decision> {
            asked a{r.kind, {}, {}, r.from, r.sha256};
            for (const auto& e : r.entries)
            {
                a.ids.push_back(e->id);
                const auto* m = e->raw.if_contains("message");
                const auto* c = m ? m->as_object().if_contains("content") : nullptr;
                const auto* b =
                    c && c->is_array() && !c->get_array().empty() ? c->get_array()[0].if_object() : nullptr;
                const auto* text = b ? b->if_contains("text") : nullptr;
                a.text_sizes.push_back(text && text->is_string() ? text->get_string().size() : 0);
            }
            requests.push_back(std::move(a));
            if (mode == answer::wait)
            {
                // Until the session closes: its cancellation reaches this wait.
                asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
                co_await t.async_wait(asio::use_awaitable);
            }
            if (mode == answer::refuse)
                co_return evidence_decision{.refuse = true, .reason = "the archive is read-only"};
            if (mode == answer::throw_)
                throw std::runtime_error("archive unreachable");
            if (mode == answer::no_reference)
                co_return evidence_decision{};
            const auto n = std::to_string(requests.size());
            co_return evidence_decision{.references = {"archive://" + n}};
        };
    }
};

class clearing_evidence_test : public ::testing::Test
{
protected:
    void SetUp() override
    {
        path_ = test::new_session_file("agentctx-clearing-evidence");
        config_.model = {"anthropic", "claude-sonnet-4-5", 100000, 8000};  // threshold 83,616
        config_.settings.working_budget = compaction::token_amount{};
        config_.settings.background.enabled = false;
        auto& c = config_.settings.clear_tool_results;
        c.trigger = {20000, 0};
        c.keep = 2;
        c.clear_at_least = 1000;
        config_.summarizer = std::make_shared<providers::offline_summarizer>(ioc_.get_executor());
        config_.preserve_evidence = store_.callback();
    }
    void TearDown() override
    {
        session_.reset();
        fs::remove(path_);
        for (const auto& p : extra_)
            fs::remove(p);
    }

    void open()
    {
        session_ = test::open_session(ioc_.get_executor(), path_, config_);
        ASSERT_TRUE(session_);
        session_->on_event([this](const runtime::session_event& e) {
            if (const auto* c = std::get_if<runtime::context_cleared_event>(&e))
                cleared_.push_back(*c);
            if (const auto* r = std::get_if<runtime::clearing_refused_event>(&e))
                refused_.push_back(*r);
        });
    }

    std::string add(json::object fields) { return test::append_entry(ioc_, *session_, std::move(fields)); }

    // `n` rounds of one 4,000-token read each (after a prompt when `prompt`); the results' ids.
    std::vector<std::string> rounds(int from, int n, bool prompt = true)
    {
        if (prompt)
            add(message({{"role", "user"}, {"content", "fix it"}}));
        std::vector<std::string> ids;
        for (int i = from; i < from + n; ++i)
        {
            const auto k = "c" + std::to_string(i);
            add(assistant(json::array{call(k)}));
            ids.push_back(add(result(k, 4000)));
        }
        return ids;
    }

    template <class Result, class Op>
    std::pair<error_code, Result> run(Op op)
    {
        std::pair<error_code, Result> out;
        bool done = false;
        op([&](error_code ec, Result r) {
            out = {ec, std::move(r)};
            done = true;
        });
        test::run_until(ioc_, [&] { return done; });
        return out;
    }

    // The run's final answer with its request's `input` tokens, then the post-run check.
    std::pair<error_code, runtime::compaction_outcome> answer(std::int64_t input)
    {
        add(assistant(json::array{json::object{{"type", "text"}, {"text", "done"}}}, input));
        return run<runtime::compaction_outcome>([this](auto h) { session_->async_on_turn_end(std::move(h)); }
        );
    }

    // The stored lines (header first) and the line of entry `id`.
    std::vector<std::string> lines() const
    {
        std::vector<std::string> out;
        std::istringstream in(test::read_text(path_));
        for (std::string l; std::getline(in, l);)
            out.push_back(l);
        return out;
    }
    std::string line_of(const std::string& id) const
    {
        for (const auto& l : lines())
            if (l.find("\"id\":\"" + id + "\"") != std::string::npos)
                return l;
        return {};
    }
    json::object entry(const std::string& id) const { return json::parse(line_of(id)).as_object(); }

    std::size_t edit_lines() const
    {
        std::size_t n = 0;
        for (const auto& l : lines())
            n += l.find("\"type\":\"context_edit\"") != std::string::npos;
        return n;
    }

    asio::io_context ioc_;
    fs::path path_;
    std::vector<fs::path> extra_;
    evidence_store store_;
    runtime::session_config config_;
    std::shared_ptr<runtime::session> session_;
    std::vector<runtime::context_cleared_event> cleared_;
    std::vector<runtime::clearing_refused_event> refused_;
};

}  // namespace

TEST_F(
    clearing_evidence_test, the_store_gets_the_original_cleared_entries_and_each_edit_carries_its_reference
)
{
    open();
    const auto ids = rounds(1, 5);  // path: prompt 0, then call/result pairs: results at 2, 4, 6, 8, 10
    const auto [ec, outcome] = answer(25000);
    ASSERT_FALSE(ec) << outcome.message;
    ASSERT_EQ(store_.requests.size(), 1u);
    const auto& asked = store_.requests[0];
    EXPECT_EQ(asked.kind, evidence_kind::cleared);
    EXPECT_EQ(asked.ids, (std::vector<std::string>{ids[0], ids[1], ids[2]}));
    EXPECT_EQ(
        asked.text_sizes, (std::vector<std::size_t>{16000, 16000, 16000})
    );  // the originals, not placeholders
    EXPECT_EQ(asked.from, 2u);
    const auto l0 = line_of(ids[0]) + "\n", l1 = line_of(ids[1]) + "\n", l2 = line_of(ids[2]) + "\n";
    EXPECT_EQ(asked.sha256, compaction::sha256_hex(l0 + l1 + l2));
    // Written after the answer: one batch, each edit bound to its own target's position and line.
    ASSERT_EQ(cleared_.size(), 1u);
    ASSERT_EQ(cleared_[0].edit_ids.size(), 3u);
    EXPECT_EQ(edit_lines(), 3u);
    const std::string target_lines[] = {l0, l1, l2};
    for (std::size_t k = 0; k < 3; ++k)
    {
        const auto e = entry(cleared_[0].edit_ids[k]);
        EXPECT_EQ(e.at("targetId").as_string(), ids[k]);
        EXPECT_EQ(
            e.at("details").at("agentctx").at("evidenceRefs"),
            json::value(json::array{json::object{
                {"ref", "archive://1"},
                {"from", 2 + 2 * k},
                {"count", 1},
                {"sha256", compaction::sha256_hex(target_lines[k])}}})
        ) << k;
    }
    // The details change nothing of the projection: the placeholder stands in, as without them.
    for (const auto& m : session_->context())
    {
        if (m.entry_id == ids[0])
        {
            EXPECT_NE(
                compaction::content_text(m.msg->content).find("[Tool result cleared:"), std::string::npos
            );
        }
    }
    EXPECT_TRUE(refused_.empty());
}

TEST_F(clearing_evidence_test, a_refusal_writes_nothing_and_the_same_entries_are_not_asked_about_again)
{
    store_.mode = evidence_store::answer::refuse;
    open();
    const auto ids = rounds(1, 5);
    const auto before_edits = edit_lines();
    const auto [ec, outcome] = answer(25000);
    // Clearing is an optimisation: the check went on and found the context under the threshold.
    ASSERT_FALSE(ec) << outcome.message;
    EXPECT_EQ(outcome.message, "under the threshold");
    ASSERT_EQ(store_.requests.size(), 1u);
    EXPECT_EQ(edit_lines(), before_edits);
    EXPECT_TRUE(cleared_.empty());
    ASSERT_EQ(refused_.size(), 1u);
    EXPECT_EQ(refused_[0].target_ids, (std::vector<std::string>{ids[0], ids[1], ids[2]}));
    EXPECT_EQ(refused_[0].reason, "the host's evidence store refused: the archive is read-only");
    EXPECT_EQ(refused_[0].tokens_before, 25100);
    // The next checks plan without those entries: nothing else to clear, nobody asked.
    answer(25000);
    const auto [ec2, outcome2] = answer(25000);
    EXPECT_FALSE(ec2);
    EXPECT_EQ(store_.requests.size(), 1u);
    EXPECT_EQ(refused_.size(), 1u);
    EXPECT_EQ(edit_lines(), 0u);
    // New entries may be cleared: only those are asked about.
    store_.mode = evidence_store::answer::keep;
    const auto more = rounds(6, 3, false);
    answer(40000);
    ASSERT_EQ(store_.requests.size(), 2u);
    for (const auto& id : store_.requests[1].ids)
        EXPECT_TRUE(id != ids[0] && id != ids[1] && id != ids[2]) << id;
    ASSERT_EQ(cleared_.size(), 1u);
    EXPECT_EQ(cleared_[0].target_ids, store_.requests[1].ids);
    EXPECT_EQ(cleared_[0].target_ids.front(), ids[3]);
}

TEST_F(clearing_evidence_test, a_throw_or_no_reference_is_a_refusal_too)
{
    for (const auto mode : {evidence_store::answer::throw_, evidence_store::answer::no_reference})
    {
        TearDown();
        SetUp();
        refused_.clear();
        store_.mode = mode;
        open();
        rounds(1, 5);
        const auto [ec, outcome] = answer(25000);
        EXPECT_FALSE(ec) << outcome.message;
        EXPECT_EQ(edit_lines(), 0u);
        ASSERT_EQ(refused_.size(), 1u);
        EXPECT_EQ(
            refused_[0].reason,
            mode == evidence_store::answer::throw_
                ? "the host's evidence store refused: it threw: archive unreachable"
                : "the host's evidence store returned no reference"
        );
    }
}

TEST_F(clearing_evidence_test, close_cancels_the_store_and_nothing_is_written)
{
    store_.mode = evidence_store::answer::wait;
    open();
    rounds(1, 5);
    add(assistant(json::array{json::object{{"type", "text"}, {"text", "done"}}}, 25000));
    std::optional<error_code> done;
    session_->async_on_turn_end([&](error_code ec, runtime::compaction_outcome) { done = ec; });
    test::run_until(ioc_, [&] { return !store_.requests.empty(); });
    EXPECT_FALSE(done);
    session_->close();
    test::run_until(ioc_, [&] { return done.has_value(); });
    EXPECT_EQ(*done, runtime::make_error_code(runtime::errc::session_closed));
    EXPECT_EQ(edit_lines(), 0u);
    EXPECT_TRUE(cleared_.empty());
    EXPECT_TRUE(refused_.empty());  // cancelled, not refused
}

// Cleared, then more rounds, then a compaction that covers the edits: its checkpoint carries
// the clearing's references after its own, and restore checks each cleared entry.
TEST_F(clearing_evidence_test, a_checkpoint_carries_the_cleared_references_and_restore_checks_them)
{
    config_.settings.keep_recent_tokens = 5000;
    open();
    const auto ids = rounds(1, 5);
    ASSERT_FALSE(answer(25000).first);
    ASSERT_EQ(cleared_.size(), 1u);
    rounds(6, 4);
    const auto [cec, compacted] = run<runtime::compaction_outcome>([this](auto h) {
        session_->async_compact(std::nullopt, std::move(h));
    });
    ASSERT_FALSE(cec) << compacted.message;
    ASSERT_TRUE(compacted.compacted);
    ASSERT_EQ(store_.requests.size(), 2u);
    EXPECT_EQ(store_.requests[1].kind, evidence_kind::summarized);
    const auto [eec, exported] =
        run<runtime::checkpoint_outcome>([this](auto h) { session_->async_export_checkpoint(std::move(h)); });
    ASSERT_FALSE(eec) << exported.message;
    const auto& ev = exported.record->evidence;
    ASSERT_EQ(ev.size(), 4u);
    EXPECT_EQ(ev[0].ref, "archive://2");  // the compaction's own range
    for (std::size_t k = 0; k < 3; ++k)
    {
        const auto edit = entry(cleared_[0].edit_ids[k]);
        const auto& want = edit.at("details").at("agentctx").at("evidenceRefs").at(0);
        EXPECT_EQ(json::value(compaction::to_json(ev[k + 1])), want) << k;
        EXPECT_EQ(ev[k + 1].count, 1u);
    }

    // A copy: the lines before the compaction. Restoring there works; with a cleared result's
    // bytes changed the record is refused for that range, before the covered prefix is compared.
    auto all = lines();
    all.pop_back();
    auto write_copy = [&](const std::string& name, const std::vector<std::string>& ls) {
        const auto p = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".jsonl");
        extra_.push_back(p);
        std::ofstream out(p);
        for (const auto& l : ls)
            out << l << '\n';
        return p;
    };
    auto restore = [&](const fs::path& p, json::value record) {
        auto s = test::open_session(ioc_.get_executor(), p, config_);
        return run<runtime::checkpoint_outcome>([&](auto h) {
            s->async_restore_checkpoint(std::move(record), std::move(h));
        });
    };
    const auto good =
        restore(write_copy("agentctx-clearing-copy", all), compaction::to_json(*exported.record));
    ASSERT_FALSE(good.first) << good.second.message;

    auto tampered = all;
    for (auto& l : tampered)
        if (l.find("\"id\":\"" + ids[1] + "\"") != std::string::npos)
            l.replace(l.find("xxxx"), 4, "xxyx");
    // Only the cleared references: the compaction's own range would name the change as well.
    auto record = *exported.record;
    record.evidence.erase(record.evidence.begin());
    record.digest = compaction::record_digest(record);
    const auto bad = restore(write_copy("agentctx-clearing-tampered", tampered), compaction::to_json(record));
    EXPECT_EQ(bad.first, compaction::make_error_code(compaction::errc::checkpoint_mismatch));
    EXPECT_EQ(bad.second.reason, compaction::checkpoint_reason::evidence_mismatch) << bad.second.message;
    EXPECT_NE(bad.second.message.find("archive://1"), std::string::npos) << bad.second.message;
    EXPECT_NE(bad.second.message.find("entries 5-5"), std::string::npos) << bad.second.message;
}
