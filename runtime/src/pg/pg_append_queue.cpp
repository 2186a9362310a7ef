// The group-commit queue of the PostgreSQL store: one pipeline per group, a compare-and-set per request.
#include "pg_append_queue.hpp"

#include "pg_pool.hpp"

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

namespace agentctx::runtime::pg {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Row locks in one order for every group, so two groups (two nodes) sharing sessions wait for
// each other instead of deadlocking.
constexpr const char* lock_sessions =
    "SELECT 1 FROM agentctx_sessions WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE";

// Each request's compare-and-set (last_seq = known, then + n) and the entries of those that
// matched; the ids that committed come back.
constexpr const char* append_group =
    "WITH r AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS r(sid, known, n)), "
    "s AS (UPDATE agentctx_sessions x SET last_seq = x.last_seq + r.n FROM r "
    "WHERE x.id = r.sid AND x.last_seq = r.known RETURNING x.id, r.known), "
    "i AS (INSERT INTO agentctx_entries (session_id, seq, entry_id, parent_id, type, line) "
    "SELECT s.id, s.known + e.k, e.entry_id, e.parent_id, e.type, e.line FROM s JOIN "
    "unnest($4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[]) "
    "AS e(sid, k, entry_id, parent_id, type, line) ON e.sid = s.id RETURNING 1) "
    "SELECT id FROM s";

// A lone append of one entry (the common case under light load): the same compare-and-set in a
// statement whose plan is a single index lookup, cheaper than the group's unnest joins.
constexpr const char* append_one =
    "WITH s AS (UPDATE agentctx_sessions SET last_seq = last_seq + 1 WHERE id = $1 AND last_seq = $2 "
    "RETURNING id, last_seq) "
    "INSERT INTO agentctx_entries (session_id, seq, entry_id, parent_id, type, line) "
    "SELECT s.id, s.last_seq, $3, $4, $5, $6 FROM s RETURNING session_id";

// The committed counts, `<count> <id>` lines, each element one notification (a payload holds 8000
// bytes). Sent after the commit as a transaction of its own that reads no table: it writes no
// WAL, so it neither waits for a flush nor holds the notification lock across one, and the
// appends' commits are not serialised on that lock.
constexpr const char* notify_counts = "SELECT pg_notify('agentctx_sessions', p) FROM unnest($1::text[]) AS p";
constexpr std::size_t max_payload = 7000;

std::string line_of(const compaction::entry& e)
{
    std::string line = to_jsonl_line(e.raw);
    if (!line.empty() && line.back() == '\n')
        line.pop_back();
    return line;
}

// The transaction of a group: lock (groups of two or more), then compare-and-set + insert.
std::vector<transaction> group_pipeline(const std::vector<append_request>& group)
{
    if (group.size() == 1 && group[0].entries.size() == 1)
    {
        const auto& r = group[0];
        const auto& e = *r.entries[0];
        transaction write{
            {"agentctx_append_one",
             append_one,
             {r.session_id,
              std::to_string(r.known),
              e.id,
              e.parent_id ? std::optional<std::string>(*e.parent_id) : std::nullopt,
              e.type_name,
              line_of(e)}}};
        return {std::move(write)};
    }
    std::vector<std::optional<std::string>> sid, known, n, e_sid, e_k, e_id, e_parent, e_type, e_line;
    for (const auto& r : group)
    {
        sid.emplace_back(r.session_id);
        known.emplace_back(std::to_string(r.known));
        n.emplace_back(std::to_string(r.entries.size()));
        for (std::size_t k = 0; k < r.entries.size(); ++k)
        {
            const auto& e = *r.entries[k];
            e_sid.emplace_back(r.session_id);
            e_k.emplace_back(std::to_string(k + 1));
            e_id.emplace_back(e.id);
            e_parent.emplace_back(e.parent_id ? std::optional<std::string>(*e.parent_id) : std::nullopt);
            e_type.emplace_back(e.type_name);
            e_line.emplace_back(line_of(e));
        }
    }
    const std::string ids = text_array(sid);
    transaction write;
    if (group.size() > 1)
        write.push_back({"agentctx_lock", lock_sessions, {ids}});
    write.push_back(
        {"agentctx_append",
         append_group,
         {ids,
          text_array(known),
          text_array(n),
          text_array(e_sid),
          text_array(e_k),
          text_array(e_id),
          text_array(e_parent),
          text_array(e_type),
          text_array(e_line)}}
    );
    return {std::move(write)};
}

// The requests whose compare-and-set matched committed; the others are stale. Returns the
// notification payloads announcing the committed counts.
std::vector<std::optional<std::string>> finish_group(
    pool& owner, std::vector<append_request>& group, const transaction_result& write
)
{
    std::set<std::string, std::less<>> committed;
    for (const auto& row : write.statements.back().values)
        committed.insert(row[0].value_or(std::string()));
    std::vector<std::optional<std::string>> payloads;
    for (auto& req : group)
    {
        if (!committed.contains(req.session_id))
        {
            req.done(
                make_error_code(errc::stale_leaf),
                "session '" + req.session_id +
                    "' has entries this node has not seen (another node appended); reload and retry"
            );
            continue;
        }
        const std::size_t count = req.known + req.entries.size();
        owner.note_count(req.session_id, count);
        req.done(error_code{}, std::string());
        const std::string line = std::to_string(count) + " " + req.session_id;
        if (payloads.empty() || payloads.back()->size() + line.size() + 1 > max_payload)
            payloads.emplace_back(line);
        else
            *payloads.back() += "\n" + line;
    }
    return payloads;
}

void fail_all(std::vector<append_request>& group, error_code ec, const std::string& message)
{
    for (auto& r : group)
        r.done(ec, message);
}

}  // namespace

append_queue::append_queue(pool& owner, std::size_t max_flushers, std::size_t max_group)
    : owner_(owner), max_flushers_(std::max<std::size_t>(1, max_flushers)),
      max_group_(std::max<std::size_t>(1, max_group))
{}

void append_queue::submit(append_request r)
{
    bool start = false;
    {
        std::lock_guard lock(mutex_);
        pending_.push_back(std::move(r));
        if (flushers_ < max_flushers_)
        {
            ++flushers_;
            start = true;
        }
    }
    if (start)
        asio::co_spawn(owner_.executor(), flush_loop(owner_.shared_from_this()), asio::detached);
}

void append_queue::note_fallback(std::size_t size, const std::string& why)
{
    spdlog::warn("pg_store: a group of {} appends failed ({}); retrying them one at a time", size, why);
    std::lock_guard lock(mutex_);
    ++stats_.fallbacks;
}

append_queue::counters append_queue::stats() const
{
    std::lock_guard lock(mutex_);
    return stats_;
}

std::vector<append_request> append_queue::take_group()
{
    std::lock_guard lock(mutex_);
    std::vector<append_request> group;
    std::set<std::string, std::less<>> sessions;
    // One request per session in a group (the statement's compare-and-set is per row); a
    // second one of the same session waits for the next group.
    for (auto it = pending_.begin(); it != pending_.end() && group.size() < max_group_;)
    {
        if (!sessions.insert(it->session_id).second)
        {
            ++it;
            continue;
        }
        group.push_back(std::move(*it));
        it = pending_.erase(it);
    }
    if (group.empty())
        --flushers_;
    else
    {
        ++stats_.groups;
        stats_.appends += group.size();
    }
    return group;
}

asio::awaitable<void> append_queue::flush_loop(std::shared_ptr<pool> /*keep: the pool outlives the loop*/)
{
    for (auto group = take_group(); !group.empty(); group = take_group())
        co_await commit_group(std::move(group), true);
}

asio::awaitable<void> append_queue::commit_group(std::vector<append_request> group, bool alone_on_failure)
{
    diagnostics diag;
    auto c = co_await owner_.acquire(diag);
    if (!c)
        co_return fail_all(group, c.error(), diag.message);
    auto r = co_await (*c)->pipeline(group_pipeline(group), diag);
    if (!r)
    {
        owner_.release(std::move(*c));
        co_return fail_all(group, make_error_code(errc::database_error), diag.message);
    }
    const auto& write = r->front();
    if (!write.ok())
    {
        owner_.release(std::move(*c));
        if (group.size() == 1 || !alone_on_failure)
            co_return fail_all(group, make_error_code(errc::database_error), write.error);
        // Nothing of the group committed: each request alone, so a bad one fails only itself.
        note_fallback(group.size(), write.error);
        for (auto& req : group)
        {
            std::vector<append_request> one;
            one.push_back(std::move(req));
            co_await commit_group(std::move(one), false);
        }
        co_return;
    }
    // Acknowledged first: the notification costs the appends no latency.
    auto payloads = finish_group(owner_, group, write);
    if (payloads.empty())
        co_return owner_.release(std::move(*c));
    const std::vector<transaction> notify{{{"agentctx_notify", notify_counts, {text_array(payloads)}}}};
    auto n = co_await (*c)->pipeline(notify, diag);
    owner_.release(std::move(*c));
    if (!n || !n->front().ok())
        spdlog::warn(
            "pg_store: notifying other nodes failed ({}); they catch up at their next check",
            n ? n->front().error : diag.message
        );
}

}  // namespace agentctx::runtime::pg
