// The piece planner and progress records: batches never split a tool round, pieces cover every
// message exactly once within the bound, identities and strict parsing with named reasons.
#include <agentctx/compaction/piece_plan.hpp>
#include <agentctx/compaction/progress_record.hpp>
#include <agentctx/compaction/settings.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace {

using namespace agentctx::compaction;

std::shared_ptr<const message> text_msg(role r, std::string text)
{
    auto m = std::make_shared<message>();
    m->role = r;
    m->role_name = std::string(to_string(r));
    if (r == role::user)
    {
        m->content.is_string = true;
        m->content.text = std::move(text);
    }
    else
        m->content.blocks.push_back(text_block{std::move(text)});
    return m;
}

std::shared_ptr<const message> calls(std::vector<std::string> ids)
{
    auto m = std::make_shared<message>();
    m->role = role::assistant;
    m->role_name = "assistant";
    for (auto& id : ids)
        m->content.blocks.push_back(tool_call_block{id, "read", {{"path", "a.txt"}}});
    return m;
}

std::shared_ptr<const message> result(std::string id, std::string text)
{
    auto m = std::make_shared<message>();
    m->role = role::tool_result;
    m->role_name = "toolResult";
    m->tool_call_id = std::move(id);
    m->tool_name = "read";
    m->content.blocks.push_back(text_block{std::move(text)});
    return m;
}

struct prefix_builder
{
    std::vector<context_message> msgs;
    int next = 0;
    std::string id() { return "e" + std::to_string(next++); }
    prefix_builder& user(std::string t)
    {
        msgs.push_back({text_msg(role::user, std::move(t)), id()});
        return *this;
    }
    prefix_builder& say(std::string t)
    {
        msgs.push_back({text_msg(role::assistant, std::move(t)), id()});
        return *this;
    }
    prefix_builder& call(std::vector<std::string> ids)
    {
        msgs.push_back({calls(std::move(ids)), id()});
        return *this;
    }
    prefix_builder& res(std::string c, std::string t)
    {
        msgs.push_back({result(std::move(c), std::move(t)), id()});
        return *this;
    }
};

TEST(piece_plan, a_tool_round_is_one_batch_and_interleaved_rounds_merge)
{
    prefix_builder b;
    b.user("u0").call({"c1"}).res("c1", "r1").say("ok");          // 0..3
    b.call({"c2"}).call({"c3"}).res("c2", "r2").res("c3", "r3");  // 4..7: interleaved rounds
    b.user("u8");
    const auto batches = exchange_batches(b.msgs);
    std::vector<std::pair<std::size_t, std::size_t>> got;
    for (const auto& x : batches)
        got.emplace_back(x.begin, x.end);
    const std::vector<std::pair<std::size_t, std::size_t>> want{{0, 1}, {1, 3}, {3, 4}, {4, 8}, {8, 9}};
    EXPECT_EQ(got, want);
    EXPECT_EQ(batches[0].chars, std::string("[User]: u0").size());
    EXPECT_FALSE(is_batch_boundary(b.msgs, 2));
    EXPECT_FALSE(is_batch_boundary(b.msgs, 6));
    EXPECT_TRUE(is_batch_boundary(b.msgs, 4));
}

TEST(piece_plan, messages_of_one_entry_stay_together)
{
    prefix_builder b;
    b.user("a").user("b");
    b.msgs[1].entry_id = b.msgs[0].entry_id;  // a compaction-like entry contributing two messages
    b.user("c");
    const auto batches = exchange_batches(b.msgs);
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batches[0].end, 2u);
}

TEST(piece_plan, pieces_pack_whole_batches_up_to_the_bound)
{
    prefix_builder b;
    for (int i = 0; i < 6; ++i)
        b.user(std::string(90, 'a' + i));  // "[User]: " + 90 = 98 chars each
    // 98 + 2 + 98 = 198 <= 200: two per piece.
    const auto pieces = plan_pieces(b.msgs, 200);
    ASSERT_EQ(pieces.size(), 3u);
    EXPECT_EQ(pieces[0], (summary_piece{0, 2, 198, false}));
    EXPECT_EQ(pieces[2], (summary_piece{4, 6, 198, false}));
    EXPECT_EQ(plan_pieces(b.msgs, 0).size(), 1u);
    EXPECT_EQ(plan_pieces(b.msgs, 200, 2).front().begin, 2u);
    EXPECT_EQ(source_chars(b.msgs), 6u * 98 + 5 * 2);
}

TEST(piece_plan, an_oversized_batch_is_its_own_piece_and_never_split)
{
    prefix_builder b;
    b.user("short").call({"c1"}).res("c1", std::string(1500, 'r')).user("tail");
    const auto pieces = plan_pieces(b.msgs, 300);
    ASSERT_EQ(pieces.size(), 3u);
    EXPECT_EQ(pieces[1].begin, 1u);
    EXPECT_EQ(pieces[1].end, 3u);
    EXPECT_TRUE(pieces[1].oversized);
    EXPECT_FALSE(pieces[0].oversized);
}

// The coverage guarantee over generated prefixes: every message in exactly one piece, pieces
// in order and contiguous, no piece boundary inside a tool round, every non-oversized piece
// within the bound, every oversized piece a single batch.
TEST(piece_plan, generated_prefixes_are_covered_exactly_once)
{
    std::mt19937 rng(12);
    for (int round = 0; round < 200; ++round)
    {
        prefix_builder b;
        int call = 0;
        const int n = 5 + static_cast<int>(rng() % 60);
        while (static_cast<int>(b.msgs.size()) < n)
        {
            switch (rng() % 4)
            {
            case 0:
                b.user(std::string(rng() % 400, 'u'));
                break;
            case 1:
                b.say(std::string(rng() % 400, 's'));
                break;
            default:
            {
                const int k = 1 + static_cast<int>(rng() % 3);
                std::vector<std::string> ids;
                for (int i = 0; i < k; ++i)
                    ids.push_back("c" + std::to_string(call++));
                b.call(ids);
                for (const auto& id : ids)
                    b.res(id, std::string(rng() % 900, 'r'));
            }
            }
        }
        const std::size_t limit = 200 + rng() % 1500;
        const auto pieces = plan_pieces(b.msgs, limit);
        std::vector<int> seen(b.msgs.size(), 0);
        std::size_t expect_begin = 0;
        for (const auto& p : pieces)
        {
            EXPECT_EQ(p.begin, expect_begin);
            expect_begin = p.end;
            for (std::size_t i = p.begin; i < p.end; ++i)
                ++seen[i];
            EXPECT_EQ(p.chars, source_chars(std::span(b.msgs).subspan(p.begin, p.end - p.begin)));
            if (p.oversized)
            {
                EXPECT_EQ(exchange_batches(std::span(b.msgs).subspan(p.begin, p.end - p.begin)).size(), 1u);
            }
            else
            {
                EXPECT_LE(p.chars, limit);
            }
            // No call before the boundary whose result lies after it.
            std::set<std::string> open;
            for (std::size_t i = 0; i < p.end; ++i)
                for (const auto& blk : b.msgs[i].msg->content.blocks)
                    if (const auto* c = std::get_if<tool_call_block>(&blk))
                        open.insert(c->id);
            for (std::size_t i = p.end; i < b.msgs.size(); ++i)
            {
                const bool orphaned =
                    b.msgs[i].msg->role == role::tool_result && open.contains(b.msgs[i].msg->tool_call_id);
                EXPECT_FALSE(orphaned) << "round " << round << " message " << i;
            }
        }
        EXPECT_EQ(expect_begin, b.msgs.size());
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(b.msgs.size()));
    }
}

TEST(piece_plan, the_portable_limit_is_the_smaller_of_setting_and_window_share)
{
    EXPECT_EQ(portable_source_limit(0, 200000), 360000u);  // 200,000 * 0.6 * 3
    EXPECT_EQ(portable_source_limit(50000, 200000), 50000u);
    EXPECT_EQ(portable_source_limit(500000, 200000), 360000u);
    EXPECT_EQ(portable_source_limit(1234, 0), 1234u);
    EXPECT_EQ(portable_source_limit(0, 0), 0u);
}

TEST(piece_plan, identity_changes_with_text_or_entry)
{
    prefix_builder b;
    b.user("a").say("b");
    const auto id = identity_of(b.msgs);
    EXPECT_EQ(id.count, 2u);
    EXPECT_EQ(id.sha256.size(), 64u);
    auto other = b.msgs;
    other[1].entry_id = "zz";
    EXPECT_NE(identity_of(other), id);
    other = b.msgs;
    other[1].msg = text_msg(role::assistant, "B");
    EXPECT_NE(identity_of(other), id);
    EXPECT_EQ(identity_of(b.msgs), id);
}

progress_record sample(const std::vector<context_message>& msgs)
{
    progress_record r;
    r.base = "c0ffee00";
    r.note = "## Goal\nsomething";
    r.covered = identity_of(std::span(msgs).first(2));
    r.covered_last_entry_id = msgs[1].entry_id;
    r.remaining = {4, 6};
    r.prefix_messages = 6;
    r.completed = 1;
    r.identity = {"offline", ""};
    r.config_digest = std::string(64, 'a');
    return r;
}

prefix_builder six_users()
{
    prefix_builder b;
    for (int i = 0; i < 6; ++i)
        b.user(std::string(90, 'a' + i));
    return b;
}

TEST(progress_record, round_trips_canonically)
{
    const auto b = six_users();
    const auto r = sample(b.msgs);
    const auto j = to_json(r);
    progress_reason why{};
    agentctx::compaction::diagnostics diag;
    const auto back = parse_progress(j, why, diag);
    ASSERT_TRUE(back) << diag.message;
    EXPECT_EQ(*back, r);
    EXPECT_EQ(why, progress_reason::none);
    const auto keys = [&] {
        std::vector<std::string> k;
        for (const auto& kv : j)
            k.emplace_back(kv.key());
        return k;
    }();
    EXPECT_EQ(
        keys,
        (std::vector<std::string>{
            "format",
            "base",
            "note",
            "covered",
            "remaining",
            "prefixMessages",
            "completed",
            "identity",
            "configDigest"})
    );
}

TEST(progress_record, strict_parse_names_the_reason_and_field)
{
    const auto b = six_users();
    const auto good = to_json(sample(b.msgs));
    const auto refuse = [](boost::json::object o, progress_reason want, std::string field) {
        progress_reason why{};
        agentctx::compaction::diagnostics diag;
        const auto r = parse_progress(o, why, diag);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(errc::progress_invalid));
        EXPECT_EQ(why, want) << diag.message;
        EXPECT_EQ(diag.field, field) << diag.message;
    };
    auto o = good;
    o["format"] = "agentctx-progress-v2";
    refuse(o, progress_reason::unsupported_format, "format");
    o = good;
    o["extra"] = 1;
    refuse(o, progress_reason::corrupt, "");
    o = good;
    o.erase("note");
    refuse(o, progress_reason::corrupt, "");
    o = good;
    o["note"] = "";
    refuse(o, progress_reason::corrupt, "note");
    o = good;
    o["covered"].as_object()["count"] = 0;
    refuse(o, progress_reason::corrupt, "covered.count");
    o = good;
    o["covered"].as_object()["sha256"] = std::string(64, 'A');
    refuse(o, progress_reason::corrupt, "covered.sha256");
    o = good;
    o["remaining"] = boost::json::array{4, 4};
    refuse(o, progress_reason::corrupt, "remaining");
    o = good;
    o["remaining"] = boost::json::array{1};
    refuse(o, progress_reason::corrupt, "remaining");
    o = good;
    o["prefixMessages"] = 7;
    refuse(o, progress_reason::corrupt, "prefixMessages");
    o = good;
    o["completed"] = 0;
    refuse(o, progress_reason::corrupt, "completed");
    o = good;
    o["base"] = 3;
    refuse(o, progress_reason::corrupt, "base");
    o = good;
    o["identity"] = boost::json::object{{"provider", "x"}};
    refuse(o, progress_reason::corrupt, "identity");
    o = good;
    o["configDigest"] = "abc";
    refuse(o, progress_reason::corrupt, "configDigest");
}

TEST(progress_record, check_accepts_the_same_history_and_names_each_refusal)
{
    auto b = six_users();
    const auto r = sample(b.msgs);
    progress_context now{b.msgs, std::string("c0ffee00"), {"offline", ""}, std::string(64, 'a')};
    progress_reason why{};
    agentctx::compaction::diagnostics diag;
    EXPECT_TRUE(check_progress(r, now, why, diag)) << diag.message;
    const auto refused = [&](progress_context c, progress_reason want) {
        progress_reason w{};
        agentctx::compaction::diagnostics d;
        const auto res = check_progress(r, c, w, d);
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error(), make_error_code(errc::progress_mismatch));
        EXPECT_EQ(w, want) << d.message;
        EXPECT_FALSE(d.message.empty());
    };
    auto c = now;
    c.base = std::nullopt;
    refused(c, progress_reason::other_base);
    c = now;
    c.identity = {"openai", "gpt-4.1"};
    refused(c, progress_reason::other_identity);
    c = now;
    c.config_digest = std::string(64, 'b');
    refused(c, progress_reason::other_configuration);
    c = now;
    c.prefix = std::span(b.msgs).first(1);
    refused(c, progress_reason::shortened);
    auto edited = b.msgs;
    edited[0].msg = text_msg(role::user, "edited");
    c = now;
    c.prefix = edited;
    refused(c, progress_reason::replaced);
    // A change after the covered part is fine.
    edited = b.msgs;
    edited[3].msg = text_msg(role::user, "later edit");
    c = now;
    c.prefix = edited;
    EXPECT_TRUE(check_progress(r, c, why, diag));
}

TEST(progress_record, remaining_pieces_follow_the_record_or_replan_a_grown_prefix)
{
    auto b = six_users();
    const auto r = sample(b.msgs);
    auto rest = remaining_pieces(r, b.msgs, 1000);  // the record's boundaries, not the 1000 bound
    ASSERT_EQ(rest.size(), 2u);
    EXPECT_EQ(rest[0].begin, 2u);
    EXPECT_EQ(rest[0].end, 4u);
    EXPECT_EQ(rest[1].end, 6u);
    b.user(std::string(90, 'z'));  // the prefix grew: plan the rest afresh
    rest = remaining_pieces(r, b.msgs, 1000);
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].begin, 2u);
    EXPECT_EQ(rest[0].end, 7u);
}

}  // namespace

namespace {

TEST(piece_settings, summary_bounds_parse_strictly_per_layer)
{
    using namespace agentctx::compaction;
    settings_layers l;
    l.global =
        boost::json::parse(R"({"compaction": {"summaryMaxSourceChars": 120000, "summaryMaxCalls": 4}})")
            .as_object();
    diagnostics diag;
    const auto s = resolve_settings(l, diag);
    ASSERT_TRUE(s) << diag.message;
    EXPECT_EQ(s->summary_max_source_chars, 120000);
    EXPECT_EQ(s->summary_max_calls, 4);
    EXPECT_EQ(resolve_settings({}, diag)->summary_max_calls, 0);
    l.global = boost::json::parse(R"({"compaction": {"summaryMaxCalls": -1}})").as_object();
    const auto bad = resolve_settings(l, diag);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), make_error_code(errc::invalid_settings));
    EXPECT_EQ(diag.field, "compaction.summaryMaxCalls");
    EXPECT_EQ(
        diag.message,
        "global settings: field 'compaction.summaryMaxCalls': expected a non-negative integer, got a "
        "negative, fractional or unsafe number"
    );
}

}  // namespace
