// Portable checkpoints in the session: identity and config digest, the recorded fields of every
// compaction, export of the latest one, and restore (validate, then append one compaction entry).
#include "checkpoint_ops.hpp"
#include "checkpoint_fields.hpp"
#include "session_core.hpp"

#include <agentctx/compaction/json_text.hpp>
#include <agentctx/compaction/prepare.hpp>
#include <agentctx/compaction/projection.hpp>
#include <agentctx/compaction/record_checks.hpp>
#include <agentctx/compaction/summary_prompt.hpp>
#include <agentctx/runtime/error.hpp>

#include "compaction_coordinator.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <cstdint>
#include <map>

namespace agentctx::runtime {

namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;
using namespace compaction;
using detail::commit_plan;
using detail::session_core;

compaction::checkpoint_identity checkpoint_identity_of(const session_config& c, bool from_hook)
{
    if (from_hook)
        return {"hook", ""};
    if (c.checkpoint_identity)
        return c.checkpoint_identity();
    if (!c.summarizer)
        return {};
    const std::string name = c.summarizer->name();
    const auto colon = name.find(':');
    if (colon == std::string::npos)
        return {name, ""};
    return {name.substr(0, colon), name.substr(colon + 1)};
}

compaction::summary_config summary_config_of(const session_config& c)
{
    return summary_config{
        .keep_recent_tokens = c.settings.keep_recent_tokens,
        .context_window = c.model.context_window,
        .max_output_tokens = c.model.max_output_tokens,
        .redaction_enabled = c.redaction.enabled,
        .redaction_allowlist = c.redaction.allowlist,
        .pinned_custom_types = c.pins.custom_types,
        .pinned_ids = c.pins.ids,
        .pinned_snapshot_types = c.pins.snapshot_types,
        .pinned_by_predicate = static_cast<bool>(c.pins.predicate),
        .required_custom_types = c.required.custom_types,
        .required_ids = c.required.ids,
        .required_by_predicate = static_cast<bool>(c.required.predicate),
        .keep_recent_exchanges = c.settings.keep_recent_exchanges,
    };
}

std::string config_digest_of(const session_config& c)
{
    return config_digest(summary_config_of(c));
}

result<checkpoint_status> checkpoint_status_of(
    const session_log& log, const checkpoint_identity& identity, std::string config_digest, diagnostics& diag
)
{
    checkpoint_status out;
    out.identity = identity;
    out.config_digest = std::move(config_digest);
    const auto c = latest_compaction(log);
    if (!c)
        return out;
    auto row = verify_compaction(log, *c, diag);
    if (!row)
        return row.error();
    out.latest = std::move(*row);
    auto e = log.get(*c, diag);
    if (!e)
        return e.error();
    out.recorded = recorded_fields(**e);
    out.restorable = out.recorded && out.latest->status == verify_status::ok &&
                     out.recorded->identity == out.identity &&
                     out.recorded->config_digest == out.config_digest;
    return out;
}

result<void> add_checkpoint_fields(
    const session_log& log,
    const session_config& config,
    source_revision_cache& revisions,
    json::object& agentctx,
    std::string_view first_kept,
    bool from_hook,
    diagnostics& diag
)
{
    const auto kept = log.find(first_kept);
    if (!kept)
    {
        diag.message = "firstKeptEntryId '" + std::string(first_kept) + "' names no entry";
        return compaction::errc::entry_not_found;
    }
    auto rev = revisions.compute(log, entries_before(log, *kept), diag);
    if (!rev)
        return rev.error();
    agentctx["sourceRevision"] = to_json(*rev);
    agentctx["identity"] = to_json(checkpoint_identity_of(config, from_hook));
    agentctx["configDigest"] = config_digest_of(config);
    return {};
}

checkpoint_outcome export_latest_checkpoint(const session_core& s, error_code& ec)
{
    checkpoint_outcome out;
    const auto c = latest_compaction(s.log());
    if (!c)
    {
        ec = make_error_code(compaction::errc::checkpoint_unavailable);
        out.reason = checkpoint_reason::no_compaction;
        out.message = "the active path has no compaction to export";
        return out;
    }
    diagnostics diag;
    auto r = make_checkpoint(s.log(), *c, out.reason, diag);
    if (!r)
    {
        ec = r.error();
        out.message = diag.message;
        return out;
    }
    // A compaction written before its details were redacted must not leak through its record.
    std::map<std::string, std::size_t> counts;
    redact_record(*r, s.redaction(), counts);
    if (!counts.empty())
        r->digest = record_digest(*r);
    out.record = std::move(*r);
    return out;
}

namespace {

// The active path for the snapshot after a restore: as the planner loads it, plus every entry
// from the new kept entry on materialized (it may lie before the previous compaction's kept one).
result<std::vector<entry_ptr>> restore_path(const session_log& log, std::size_t kept_from, diagnostics& diag)
{
    auto pp = load_planning_path(log, diag);
    if (!pp)
        return pp.error();
    const auto indices = log.active_path();
    for (std::size_t k = kept_from; k < pp->needed_from && k < indices.size(); ++k)
    {
        auto e = log.get(indices[k], diag);
        if (!e)
            return e.error();
        pp->entries[k] = std::move(*e);
    }
    return std::move(pp->entries);
}

}  // namespace

namespace {

// A record parsed, with its summary judged as the model's would be.
result<checkpoint_record> parse_restorable(
    const session_core& s, const json::value& record, checkpoint_reason& why, diagnostics& diag
)
{
    auto r = parse_checkpoint(record, why, diag);
    if (!r)
        return r.error();
    // Not empty, within the output cap (twice it: a split turn joins the history's summary and
    // the turn prefix's).
    const std::uint32_t cap =
        summary_output_budget(s.config().model.context_window, s.config().model.max_output_tokens, 0, 0);
    if (auto ok = check_carried_summary(r->summary, cap > UINT32_MAX / 2 ? UINT32_MAX : 2 * cap, diag); !ok)
    {
        why = checkpoint_reason::corrupt;
        return make_error_code(compaction::errc::checkpoint_invalid);
    }
    return r;
}

// The entries the record keeps verbatim: their own lines, from this prefix (it hashes the same).
result<json::array> kept_verbatim_lines(
    const session_core& s,
    const checkpoint_record& r,
    const std::vector<std::uint32_t>& path,
    diagnostics& diag
)
{
    json::array kept;
    for (const auto& kid : r.kept_verbatim_ids)
        for (std::size_t k = 0; k < r.revision.count; ++k)
            if (s.log().meta(path[k]).id == kid)
            {
                auto e = s.log().get(path[k], diag);
                if (!e)
                    return e.error();
                kept.push_back((*e)->raw);
                break;
            }
    return kept;
}

// The restored compaction entry, written like a compaction: secrets replaced in the summary,
// the file lists and the entries kept verbatim, under this session's redaction settings.
result<entry_ptr> restored_entry(
    const session_core& s,
    const checkpoint_record& r,
    const std::vector<std::uint32_t>& path,
    const std::string& id,
    const std::string& first_kept,
    diagnostics& diag
)
{
    json::array read_files, modified_files;
    for (const auto& f : r.read_files)
        read_files.emplace_back(f);
    for (const auto& f : r.modified_files)
        modified_files.emplace_back(f);
    json::object ours{
        {"reason", "restore"},
        {"restoredFrom", r.digest},
        {"summarizer", s.config().summarizer ? s.config().summarizer->name() : std::string()},
        {"sourceRevision", to_json(r.revision)},
        {"identity", to_json(r.identity)},
        {"configDigest", r.config_digest},
    };
    if (!r.evidence.empty())
    {
        json::array refs;
        for (const auto& ev : r.evidence)
            refs.push_back(to_json(ev));
        ours["evidenceRefs"] = std::move(refs);  // checked by check_checkpoint; a re-export carries it on
    }
    auto kept = kept_verbatim_lines(s, r, path, diag);
    if (!kept)
        return kept.error();
    if (!kept->empty())
        ours["pinned"] = std::move(*kept);
    std::string summary = r.summary;
    json::value written = json::object{
        {"readFiles", std::move(read_files)},
        {"modifiedFiles", std::move(modified_files)},
        {"agentctx", std::move(ours)},
    };
    std::map<std::string, std::size_t> redactions;
    redact_compaction(summary, written, s.redaction(), redactions);
    if (!redactions.empty())
        written.as_object()["agentctx"].as_object()["redactions"] = redactions_json(redactions);
    const std::string ts = iso_timestamp_now();
    return std::make_shared<const entry>(make_compaction_entry(
        id,
        s.log().leaf_id(),
        ts,
        summary,
        first_kept,
        static_cast<double>(r.tokens_before),
        std::move(written),
        false,
        std::nullopt,
        system_checkpoint(s.current()->system, ts)
    ));
}

}  // namespace

namespace {

// Inside the write turn: the record checked against the log as it is now, and the one compaction
// entry that restores it with the snapshot after it. A refusal sets `ec` and `out.message`.
result<commit_plan> plan_restore(
    const session_core& s, const json::value& record, checkpoint_outcome& out, diagnostics& diag
)
{
    if (s.closed())
    {
        diag.message = "the session was closed";
        return make_error_code(errc::session_closed);
    }
    if (s.coordinator().running())
    {
        diag.message = "a compaction is running; restore after it ends";
        return make_error_code(errc::compaction_running);
    }
    auto r = parse_restorable(s, record, out.reason, diag);
    if (!r)
        return r.error();
    out.record = *r;
    const auto path = s.log().active_path();
    if (auto ok = check_checkpoint(
            *r,
            s.log(),
            path,
            checkpoint_identity_of(s.config()),
            config_digest_of(s.config()),
            out.reason,
            diag
        );
        !ok)
        return ok.error();
    // Build everything first; the write path then stores, appends and swaps (as a compaction commit).
    const std::size_t count = r->revision.count;
    const std::string id = s.log().new_id();
    // Kept from the first entry after the covered prefix; with nothing after it, retain none.
    const std::string first_kept = count < path.size() ? s.log().meta(path[count]).id : id;
    auto e = restored_entry(s, *r, path, id, first_kept, diag);
    if (!e)
        return e.error();
    if (auto fits = check_line_fits(**e, s.log().options().max_line_bytes, diag); !fits)
    {
        out.reason = checkpoint_reason::corrupt;
        return fits.error();
    }
    auto next_path = restore_path(s.log(), count, diag);
    if (!next_path)
        return next_path.error();
    next_path->push_back(*e);
    auto next =
        snapshot_from_context(build_session_context(*next_path, &s.log()), s.log().size() + 1, s.counter());
    out.entry_id = id;
    s.logger().debug(
        "checkpoint restore planned: entry={} covered={} first_kept={} record={}",
        id,
        count,
        first_kept,
        r->digest.substr(0, 12)
    );
    return commit_plan{{std::move(*e)}, std::nullopt, std::move(next)};
}

}  // namespace

namespace {

void complete(
    asio::any_completion_handler<checkpoint_signature> h,
    const asio::strand<asio::any_io_executor>& strand,
    error_code ec,
    checkpoint_outcome out
)
{
    asio::post(strand, asio::append(std::move(h), ec, std::move(out)));
}

}  // namespace

void session_core::export_checkpoint_impl(asio::any_completion_handler<checkpoint_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), h = std::move(h)]() mutable {
        error_code ec;
        auto out = export_latest_checkpoint(*self, ec);
        complete(std::move(h), self->strand(), ec, std::move(out));
    });
}

void session_core::checkpoint_status_impl(asio::any_completion_handler<checkpoint_status_signature> h)
{
    asio::post(strand_, [self = shared_from_this(), h = std::move(h)]() mutable {
        diagnostics diag;
        auto st = checkpoint_status_of(
            self->log(), checkpoint_identity_of(self->config()), config_digest_of(self->config()), diag
        );
        const error_code ec = st ? error_code{} : st.error();
        asio::post(self->strand(), asio::append(std::move(h), ec, st ? std::move(*st) : checkpoint_status{}));
    });
}

void session_core::restore_checkpoint_impl(
    json::value record, asio::any_completion_handler<checkpoint_signature> h
)
{
    // Validated and written in one write turn, through the write path like every other write.
    asio::post(strand_, [self = shared_from_this(), record = std::move(record), h = std::move(h)]() mutable {
        auto out = std::make_shared<checkpoint_outcome>();
        auto prepare = [self, record = std::move(record), out](diagnostics& diag) {
            return plan_restore(*self, record, *out, diag);
        };
        self->writes().async_commit(
            std::move(prepare),
            [self, out, h = std::move(h)](error_code ec, std::string message) mutable {
                if (ec)
                {
                    out->entry_id.clear();
                    out->message = std::move(message);
                }
                else
                {
                    self->ledger().suppression().reset();
                    self->logger().info(
                        "checkpoint restored entry={} record={}",
                        out->entry_id,
                        out->record ? out->record->digest.substr(0, 12) : std::string()
                    );
                }
                complete(std::move(h), self->strand(), ec, std::move(*out));
            }
        );
    });
}

}  // namespace agentctx::runtime
