// session_log and its streaming builder: line index, id map, parent links, leaf, lazy entries.
#include <agentctx/compaction/session_log.hpp>

#include <agentctx/compaction/json_text.hpp>

#include "json/exact_json.hpp"
#include "json/line_indexer.hpp"
#include "scan_pipeline.hpp"

#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>

namespace agentctx::compaction {

using detail::seen;

result<std::string> string_line_reader::read(std::uint64_t offset, std::size_t length) const
{
    if (offset > text_.size() || length > text_.size() - offset)
        return errc::entry_not_found;
    return text_.substr(static_cast<std::size_t>(offset), length);
}

entry_meta make_meta(const entry_ptr& e)
{
    entry_meta m;
    m.type = e->type;
    m.id = e->id;
    if (e->type == entry_type::message && e->message)
    {
        m.message_role = e->message->role;
        if (e->message->role == role::assistant)
        {
            m.provider = e->message->provider;
            m.model = e->message->model;
        }
    }
    else if (e->type == entry_type::model_change)
    {
        m.provider = e->provider;
        m.model = e->model_id;
    }
    m.thinking_level = e->thinking_level;
    m.first_kept_entry_id = e->first_kept_entry_id;
    m.target_id = e->target_id;
    m.label = e->label.value_or("");
    m.cached = e;
    return m;
}

namespace {

static_assert(static_cast<int>(entry_type::unknown) < 0x80, "an entry_type fits in 7 bits of a packed kind");

std::uint8_t packed_kind(const entry_meta& m)
{
    const bool assistant = m.type == entry_type::message && m.message_role == role::assistant;
    return static_cast<std::uint8_t>(static_cast<std::uint8_t>(m.type) | (assistant ? 0x80 : 0));
}

}  // namespace

std::shared_ptr<entry> make_stand_in(const entry_meta& m)
{
    auto e = std::make_shared<entry>();
    e->type = m.type;
    e->id = m.id;
    e->first_kept_entry_id = m.first_kept_entry_id;
    e->target_id = m.target_id;
    e->thinking_level = m.thinking_level;
    if (m.type == entry_type::model_change)
    {
        e->provider = m.provider;
        e->model_id = m.model;
    }
    else if (m.type == entry_type::message && m.message_role == role::assistant)
    {
        auto msg = std::make_shared<message>();
        msg->role = role::assistant;
        msg->role_name = "assistant";
        msg->provider = m.provider;
        msg->model = m.model;
        e->message = std::move(msg);
    }
    return e;
}

session_log::session_log(session_header header) : header_(std::move(header)) {}

namespace detail {

std::uint64_t id_index::hash(std::string_view id) noexcept
{
    return std::hash<std::string_view>{}(id);
}

void id_index::reserve(std::size_t n)
{
    while (slots_.size() < 2 * n)
        grow();
}

void id_index::grow()
{
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, 0);
    const std::size_t mask = slots_.size() - 1;
    for (const std::uint64_t s : old)
    {
        if (!s)
            continue;
        // The slot keeps only the hash's upper half: rebuild the position from it (positions
        // use the upper half too, so that nothing has to be rehashed).
        std::size_t at = static_cast<std::size_t>(s >> 32) & mask;
        while (slots_[at])
            at = (at + 1) & mask;
        slots_[at] = s;
    }
}

std::uint32_t id_index::find(std::string_view id, const chunked_vector<entry_meta>& metas) const
{
    if (slots_.empty())
        return npos;
    const std::uint64_t tag = hash(id) >> 32;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = static_cast<std::size_t>(tag) & mask;; at = (at + 1) & mask)
    {
        const std::uint64_t s = slots_[at];
        if (!s)
            return npos;
        if ((s >> 32) == tag)
        {
            const auto i = static_cast<std::uint32_t>(s) - 1;
            if (metas[i].id == id)
                return i;
        }
    }
}

std::uint32_t id_index::insert(
    std::string_view id, std::uint64_t id_hash, std::uint32_t index, const chunked_vector<entry_meta>& metas
)
{
    if (2 * (size_ + 1) > slots_.size())
        grow();
    const std::uint64_t tag = id_hash >> 32;
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = static_cast<std::size_t>(tag) & mask;
    for (;; at = (at + 1) & mask)
    {
        const std::uint64_t s = slots_[at];
        if (!s)
            break;
        if ((s >> 32) == tag)
        {
            const auto i = static_cast<std::uint32_t>(s) - 1;
            if (metas[i].id == id)
                return i;
        }
    }
    slots_[at] = tag << 32 | (static_cast<std::uint64_t>(index) + 1);
    ++size_;
    return npos;
}

}  // namespace detail

std::optional<std::size_t> session_log::find(std::string_view id) const
{
    const auto i = by_id_.find(id, metas_);
    if (i == detail::id_index::npos)
        return std::nullopt;
    return i;
}

std::optional<std::string> session_log::label_of(std::string_view id) const
{
    const auto it = labels_.find(std::string(id));
    if (it == labels_.end())
        return std::nullopt;
    return it->second;
}

namespace {

// Parses an indexed line. The indexer accepts lone surrogate escapes, which Boost.JSON 1.81
// refuses: those lines are decoded with U+FFFD in their place (the file keeps its bytes).
boost::json::value parse_line(std::string_view text, std::size_t max_depth, boost::system::error_code& ec)
{
    auto v = detail::parse_exact(text, max_depth, ec);
    if (ec)
        if (const auto fixed = detail::replace_lone_surrogates(text))
        {
            ec.clear();
            v = detail::parse_exact(*fixed, max_depth, ec);
        }
    return v;
}

void apply_label(std::unordered_map<std::string, std::string>& labels, const entry_meta& m)
{
    if (m.type != entry_type::label)
        return;
    if (m.label.empty())
        labels.erase(m.target_id);
    else
        labels[m.target_id] = m.label;
}

}  // namespace

std::optional<std::string> session_log::leaf_id() const
{
    if (!leaf_)
        return std::nullopt;
    return metas_[*leaf_].id;
}

result<void> session_log::branch(std::string_view id, diagnostics& diag)
{
    const auto i = find(id);
    if (!i)
    {
        diag.field = "id";
        diag.message = "entry '" + std::string(id) + "' not found";
        return errc::entry_not_found;
    }
    leaf_ = *i;
    return {};
}

std::vector<std::uint32_t> session_log::path_to(std::optional<std::size_t> leaf) const
{
    std::vector<std::uint32_t> path;
    if (!leaf)
        return path;
    // Cycles were rejected (or broken) at load and appends only link to existing entries.
    std::size_t length = 0;
    for (std::int32_t i = static_cast<std::int32_t>(*leaf); i >= 0; i = parents_[static_cast<std::size_t>(i)])
        ++length;
    path.resize(length);
    for (std::int32_t i = static_cast<std::int32_t>(*leaf); i >= 0; i = parents_[static_cast<std::size_t>(i)])
        path[--length] = static_cast<std::uint32_t>(i);
    return path;
}

void session_log::migrate_object(std::size_t i, boost::json::object& o) const
{
    if (source_version_ >= current_session_version)
        return;
    const entry_meta& m = metas_[i];
    if (source_version_ < 2)
    {
        o["id"] = m.id;
        if (m.parent >= 0)
            o["parentId"] = metas_[static_cast<std::size_t>(m.parent)].id;
        else
            o["parentId"] = nullptr;
        if (i < legacy_first_kept_index_.size() && legacy_first_kept_index_[i] >= 0 &&
            o.contains("firstKeptEntryIndex"))
        {
            // v1 indices count the header as 0.
            const auto fk = legacy_first_kept_index_[i];
            o.erase("firstKeptEntryIndex");
            o["firstKeptEntryId"] = fk >= 1 && static_cast<std::size_t>(fk - 1) < metas_.size()
                                        ? metas_[static_cast<std::size_t>(fk - 1)].id
                                        : std::string();
        }
    }
    if (auto* msg = o.if_contains("message"); msg && msg->is_object())
    {
        auto& mo = msg->get_object();
        if (auto* r = mo.if_contains("role"); r && r->is_string() && r->get_string() == "hookMessage")
            *r = "custom";
    }
}

result<entry_ptr> session_log::get(std::size_t i, diagnostics& diag) const
{
    const entry_meta& m = metas_[i];
    if (m.cached)
        return m.cached;
    auto fail = [&](errc code) -> result<entry_ptr> {
        diag.line = m.line;
        diag.message = "line " + std::to_string(m.line) + ": " + diag.message;
        return code;
    };
    if (!reader_)
    {
        diag.message = "entry has no backing store";
        return fail(errc::entry_not_found);
    }
    auto text = reader_->read(m.offset, m.length);
    if (!text)
    {
        diag.message = "cannot read the line back: " + text.error().message();
        return text.error();
    }
    boost::system::error_code ec;
    auto v = parse_line(*text, opts_.max_depth + 1, ec);
    if (ec || !v.is_object())
    {
        diag.message = "the line changed on disk since it was indexed";
        return fail(errc::invalid_json);
    }
    migrate_object(i, v.get_object());
    auto e = decode_entry(std::move(v.get_object()), diag);
    if (!e)
        return fail(static_cast<errc>(e.error().value()));
    return std::make_shared<const entry>(std::move(*e));
}

result<std::string> session_log::line_bytes(std::size_t i, diagnostics& diag) const
{
    const entry_meta& m = metas_[i];
    if (m.line != 0 && reader_)
    {
        auto text = reader_->read(m.offset, m.length);
        if (!text)
            diag.message =
                "line " + std::to_string(m.line) + ": cannot read the line back: " + text.error().message();
        return text;
    }
    if (m.cached)
    {
        std::string line;  // exactly the line the store wrote (runtime::to_jsonl_line)
        stringify_to(line, m.cached->raw);
        return line;
    }
    diag.message = "entry '" + m.id + "' has no backing store";
    return errc::entry_not_found;
}

result<void> session_log::append(entry_ptr e, diagnostics& diag)
{
    if (source_version_ < current_session_version)
    {
        diag.message = "the session file is version " + std::to_string(source_version_) +
                       "; run migrate before appending to it";
        return errc::migration_required;
    }
    if (e->id.empty() || contains(e->id))
    {
        diag.field = "id";
        diag.message = e->id.empty() ? "entry id is empty" : "duplicate id '" + e->id + "'";
        return e->id.empty() ? errc::missing_field : errc::duplicate_id;
    }
    std::int32_t parent = -1;
    if (e->parent_id)
    {
        const auto p = find(*e->parent_id);
        if (!p)
        {
            diag.field = "parentId";
            diag.message = "parentId '" + *e->parent_id + "' names no entry";
            return errc::dangling_parent;
        }
        parent = static_cast<std::int32_t>(*p);
    }
    if (e->type == entry_type::label && !contains(e->target_id))
    {
        diag.field = "targetId";
        diag.message = "label target '" + e->target_id + "' names no entry";
        return errc::entry_not_found;
    }
    entry_meta m = make_meta(e);
    m.parent = parent;
    apply_label(labels_, m);
    kinds_.push_back(packed_kind(m));
    metas_.push_back(std::move(m));
    parents_.push_back(parent);
    by_id_.insert(metas_[metas_.size() - 1].id, static_cast<std::uint32_t>(metas_.size() - 1), metas_);
    leaf_ = metas_.size() - 1;
    return {};
}

std::string session_log::new_id() const
{
    return new_entry_id([this](const std::string& id) { return contains(id); });
}

// ---------------------------------------------------------------------------------------------

namespace {

// Feeds at least this large are scanned on two threads (scan_pipeline), in units of about the
// size of a core's cache share: each unit is scanned by the thread that read it, while it is hot.
constexpr std::size_t parallel_feed_bytes = 128 * 1024;
constexpr std::size_t parallel_unit_bytes = 256 * 1024;
// Buffers kept for reuse: the chunks fed through feed_owned() (spare_buffer()) or read here.
constexpr std::size_t max_spare_buffers = 3;

}  // namespace

struct session_log_builder::impl
{
    explicit impl(load_options o) : opts(o), indexer(o.max_depth) {}

    load_options opts;
    detail::line_indexer indexer;
    std::vector<std::string> spare_buffers;  // feed_owned() chunks handed back by spare_buffer()

    // The line's scan: the one a pipeline did, or one done here.
    result<detail::line_fields*> index_line(std::string_view text, detail::line_scan* scanned, diagnostics& d)
    {
        if (scanned)
        {
            if (scanned->code != errc{})
            {
                d.message = scanned->message;
                return scanned->code;
            }
            return &scanned->fields;
        }
        return indexer.index(text, d);
    }

    std::string carry;
    std::uint64_t carry_offset = 0;
    bool carry_too_long = false;
    std::uint64_t pos = 0;
    std::size_t line_no = 0;

    bool have_header = false;
    session_header header;
    // The index, built as lines come: ids go into `by_id` at once, and a parent that appeared
    // before its child (always, in what Pi writes) is linked at once. What can only be judged
    // with the whole file is kept for resolve(), which reports it in the order a pass over the
    // finished index would: duplicates, then parents that name no entry, then cycles.
    chunked_vector<entry_meta> metas;   // without duplicates
    std::vector<std::int32_t> parents;  // metas[i].parent, packed
    std::vector<std::uint8_t> kinds;    // session_log::kinds_
    detail::id_index by_id;
    struct duplicate
    {
        std::size_t line, first_line;
        std::string id;
    };
    std::vector<duplicate> duplicates;
    struct pending_parent
    {
        std::size_t index;
        std::string id;
    };
    std::vector<pending_parent> pending_parents;     // not (yet) an earlier entry's id
    std::vector<std::uint32_t> compactions, labels;  // indices into metas, in file order
    std::vector<std::int64_t> legacy_fk;
    load_report report;

    errc error{};
    diagnostics diag;

    bool failed() const { return error != errc{}; }

    void fail(errc code, std::size_t line, std::string field, const std::string& what)
    {
        if (failed())
            return;
        error = code;
        diag.line = line;
        diag.field = std::move(field);
        diag.message = line ? "line " + std::to_string(line) + ": " + what : what;
    }

    // A line that cannot be used: fatal, or skipped and reported in tolerant mode.
    void bad_line(errc code, std::size_t line, std::string field, const std::string& what)
    {
        if (opts.tolerant && have_header)
        {
            report.skipped_lines.push_back({code, line, "line " + std::to_string(line) + ": " + what});
            return;
        }
        fail(code, line, std::move(field), what);
    }

    void note(std::size_t line, const std::string& what)
    {
        report.notes.push_back({errc{}, line, "line " + std::to_string(line) + ": " + what});
    }

    void header_line(std::string_view text, std::size_t line, detail::line_scan* scanned)
    {
        diagnostics d;
        auto idx = index_line(text, scanned, d);  // same validation and error codes as entries
        if (!idx)
            return fail(static_cast<errc>(idx.error().value()), line, "", d.message);
        boost::system::error_code ec;
        auto v = parse_line(text, opts.max_depth + 1, ec);
        if (ec || !v.is_object())
            return fail(errc::missing_header, line, "type", "the first line is not a session header object");
        auto h = decode_header(v.get_object(), d);
        if (!h)
            return fail(static_cast<errc>(h.error().value()), line, d.field, d.message);
        header = std::move(*h);
        report.source_version = header.version;
        have_header = true;
    }

    std::string synthetic_id(std::size_t line)
    {
        // v1 lines have no ids. Derive them from the session id and line number so that opening
        // the same file twice yields the same ids (Pi draws random ones).
        std::uint32_t h = 2166136261u;
        auto mix = [&h](std::string_view s) {
            for (unsigned char c : s)
                h = (h ^ c) * 16777619u;
        };
        mix(header.id);
        mix(std::to_string(line));
        for (;;)
        {
            char buf[9];
            std::snprintf(buf, sizeof buf, "%08x", h);
            std::string id(buf);
            if (by_id.find(id, metas) == detail::id_index::npos)
                return id;
            h = h * 16777619u + 1;
        }
    }

    // One line of the file. `scanned`: its scan, if a pipeline did it (of exactly `text`).
    void line(
        std::string_view text, std::uint64_t offset, bool terminated, detail::line_scan* scanned = nullptr
    )
    {
        const std::size_t n = ++line_no;
        report.lines = n;
        if (text.size() > opts.max_line_bytes)
            return bad_line(
                errc::line_too_long,
                n,
                "",
                "line is " + std::to_string(text.size()) + " bytes, over the limit of " +
                    std::to_string(opts.max_line_bytes)
            );
        if (offset == 0 && text.starts_with("\xEF\xBB\xBF"))
        {
            // Pi reads the file with content.trim(), which drops a byte order mark.
            note(n, "a byte order mark at the start of the file, skipped as Pi does");
            text.remove_prefix(3);
            offset += 3;
            scanned = nullptr;  // that scan included the mark
        }
        if (skipped_blank(text, n, terminated, scanned))
            return;
        if (!have_header)
            return header_line(text, n, scanned);

        diagnostics d;
        auto idx = index_line(text, scanned, d);
        if (!idx)
        {
            if (!terminated)
            {
                // An unterminated final line that does not parse: an append torn by a crash.
                report.torn = torn_tail{offset, text.size(), n};
                return;
            }
            return bad_line(static_cast<errc>(idx.error().value()), n, "", d.message);
        }
        if (!terminated)
            report.missing_final_newline = true;
        detail::line_fields& f = **idx;  // used up here: strings are moved out
        const bool v1 = header.version < 2;
        if (usable_fields(f, n, v1))
            entry_line(f, text.size(), offset, n, v1, scanned);
    }

    // A line Pi skips as blank: true when it was one (noted or not). The steps of line() are
    // inlined into it: it runs once per line of every load.
    [[gnu::always_inline]] bool skipped_blank(
        std::string_view text, std::size_t n, bool terminated, const detail::line_scan* scanned
    )
    {
        // (A line that scanned as JSON is not blank: its bytes need not be looked at again.)
        const auto blank =
            scanned && scanned->code == errc{} ? detail::blank_kind::not_blank : detail::classify_blank(text);
        if (blank == detail::blank_kind::not_blank)
            return false;
        // Pi skips lines whose trim() is empty; trim() knows all of JavaScript's whitespace.
        if (blank == detail::blank_kind::js_blank)
            note(n, "only whitespace (in JavaScript's sense), skipped as Pi does");
        // An unterminated blank tail must get its newline before the next append, or the
        // appended line would start with it (and non-JSON whitespace breaks JSON.parse).
        if (!terminated && !text.empty())
            report.missing_final_newline = true;
        return true;
    }

    // The fields an entry line must have; false when the line was refused (bad_line).
    [[gnu::always_inline]] bool usable_fields(const detail::line_fields& f, std::size_t n, bool v1)
    {
        const auto missing_or_wrong = [](seen kind) {
            return kind == seen::absent ? errc::missing_field : errc::wrong_type;
        };
        if (!f.is_object)
            bad_line(errc::wrong_type, n, "", "expected a JSON object");
        else if (f.type_kind != seen::string)
            bad_line(missing_or_wrong(f.type_kind), n, "type", "field 'type': expected string");
        else if (f.type == "session")
            bad_line(errc::wrong_type, n, "type", "a second session header");
        else if (!v1 && (f.id_kind != seen::string || f.id.empty()))
            bad_line(missing_or_wrong(f.id_kind), n, "id", "field 'id': expected a non-empty string");
        else if (!v1 && f.parent_kind != seen::string && f.parent_kind != seen::null && f.parent_kind != seen::absent)
            bad_line(errc::wrong_type, n, "parentId", "field 'parentId': expected string or null");
        else if (f.type == "message" && f.message_kind != seen::object)
            bad_line(missing_or_wrong(f.message_kind), n, "message", "field 'message': expected object");
        else
            return true;
        return false;
    }

    // Adds the entry of a line whose fields are usable.
    [[gnu::always_inline]] void entry_line(
        detail::line_fields& f,
        std::size_t length,
        std::uint64_t offset,
        std::size_t n,
        bool v1,
        const detail::line_scan* scanned
    )
    {
        // Built where it is kept (an entry_meta is 272 bytes; moving one was a tenth of a load's
        // bookkeeping), and dropped again if its id turns out to be taken.
        const auto k = static_cast<std::uint32_t>(metas.size());
        entry_meta& m = metas.emplace_back();
        m.type = entry_type_from_string(f.type);
        m.line = static_cast<std::uint32_t>(n);
        m.offset = offset;
        m.length = static_cast<std::uint32_t>(length);
        move_type_fields(f, m);
        m.id = v1 ? synthetic_id(n) : std::move(f.id);
        const std::uint64_t hash = scanned && !v1 ? scanned->id_hash : detail::id_index::hash(m.id);
        add_entry(
            k,
            hash,
            v1                              ? parent_kind::previous
            : f.parent_kind == seen::string ? parent_kind::named
                                            : parent_kind::none,
            f.parent_id
        );
        if (v1 && metas.size() > legacy_fk.size())
            legacy_fk.push_back(f.first_kept_entry_index.value_or(-1));
    }

    // The index data of `m`'s type, moved out of its line's fields.
    [[gnu::always_inline]] static void move_type_fields(detail::line_fields& f, entry_meta& m)
    {
        if (m.type == entry_type::message)
        {
            m.message_role = role_from_string(f.role);
            if (m.message_role == role::assistant)
            {
                m.provider = std::move(f.message_provider);
                m.model = std::move(f.message_model);
            }
        }
        else if (m.type == entry_type::model_change)
        {
            m.provider = std::move(f.provider);
            m.model = std::move(f.model_id);
        }
        m.thinking_level = std::move(f.thinking_level);
        m.first_kept_entry_id = std::move(f.first_kept_entry_id);
        if (m.type == entry_type::label)
        {
            m.target_id = std::move(f.target_id);
            m.label = f.label_kind == seen::string ? std::move(f.label) : std::string();
        }
        else if (m.type == entry_type::context_edit)
            m.target_id = std::move(f.target_id);
    }

    enum class parent_kind
    {
        none,      // a root
        previous,  // v1: the entry before it
        named,     // parentId
    };

    // Indexes metas[k], the entry just added, unless its id is taken (then it is dropped again
    // and reported by resolve()).
    void add_entry(std::uint32_t k, std::uint64_t id_hash, parent_kind parent, std::string& parent_id)
    {
        std::int32_t p = -1;
        if (parent == parent_kind::previous && k > 0)
            p = static_cast<std::int32_t>(k - 1);
        else if (parent == parent_kind::named)
        {
            // Almost every parent is the entry before: check it before hashing.
            if (k > 0 && metas[k - 1].id == parent_id)
                p = static_cast<std::int32_t>(k - 1);
            else if (const auto found = by_id.find(parent_id, metas); found != detail::id_index::npos)
                p = static_cast<std::int32_t>(found);
        }
        metas[k].parent = p;
        const entry_type type = metas[k].type;
        if (const std::uint32_t first = by_id.insert(metas[k].id, id_hash, k, metas);
            first != detail::id_index::npos)
        {
            duplicates.push_back({metas[k].line, metas[first].line, std::move(metas[k].id)});
            metas.truncate(k);
            return;
        }
        parents.push_back(p);
        kinds.push_back(packed_kind(metas[k]));
        if (parent == parent_kind::named && p < 0)
            pending_parents.push_back({k, std::move(parent_id)});
        if (type == entry_type::compaction)
            compactions.push_back(k);
        else if (type == entry_type::label)
            labels.push_back(k);
    }

    void feed(std::string_view bytes)
    {
        result<void> unused;
        if (bytes.size() < parallel_feed_bytes || !through_pipeline(bytes, parallel_unit_bytes, unused))
            feed_lines(bytes);
    }

    // As feed(), with the chunk's buffer kept for spare_buffer() afterwards.
    void feed_owned(std::string&& chunk)
    {
        feed(chunk);
        keep_spare(std::move(chunk));
    }

    result<void> feed_from(const byte_source& source, std::size_t chunk_bytes)
    {
        chunk_bytes = std::max<std::size_t>(chunk_bytes, 1);
        // The first chunk is read and gone through here: most sessions end within it, and a
        // second thread would cost more than it scans.
        const auto first = feed_chunk(source, 0, chunk_bytes);
        if (!first)
            return first.error();
        if (*first < chunk_bytes || failed())
            return {};
        const offset_source rest(source, *first);
        result<void> read = {};
        if (through_pipeline(rest, chunk_bytes, read))
            return read;
        // One core, or no second thread to be had: the rest chunk by chunk here too.
        for (std::uint64_t offset = *first;;)
        {
            const auto n = feed_chunk(source, offset, chunk_bytes);
            if (!n)
                return n.error();
            if (*n < chunk_bytes || failed())
                return {};
            offset += *n;
        }
    }

    // Reads `chunk_bytes` at `offset` (fewer only where the source ends) and goes through them:
    // how many.
    result<std::size_t> feed_chunk(const byte_source& source, std::uint64_t offset, std::size_t chunk_bytes)
    {
        std::string chunk = take_spare();
        chunk.resize(chunk_bytes);
        const auto n = detail::read_up_to(source, offset, chunk.data(), chunk_bytes);
        if (!n)
            return n.error();
        chunk.resize(*n);
        feed_lines(chunk);
        keep_spare(std::move(chunk));
        return *n;
    }

    // A source's bytes from `base` on.
    class offset_source final : public byte_source
    {
    public:
        offset_source(const byte_source& source, std::uint64_t base) : source_(source), base_(base) {}
        result<std::size_t> read(std::uint64_t offset, char* into, std::size_t size) const override
        {
            return source_.read(base_ + offset, into, size);
        }

    private:
        const byte_source& source_;
        std::uint64_t base_;
    };

    // Goes through `input` (bytes or a byte_source) in units that two threads read and scan;
    // false (nothing done) when there is one core or no second thread to be had. A read error
    // ends the input there and is left in `read`.
    template <class Input>
    bool through_pipeline(const Input& input, std::size_t unit_bytes, result<void>& read)
    {
        static const bool two_cores = std::thread::hardware_concurrency() > 1;
        if (!two_cores)
            return false;
        std::optional<detail::scan_pipeline> pipe;
        try
        {
            pipe.emplace(input, unit_bytes, pos, starts_line(), opts.max_depth);
        }
        catch (const std::exception&)
        {
            return false;  // no thread (or no memory) to be had: this thread alone
        }
        while (!failed())
        {
            detail::scan_unit* u = pipe->next();
            if (!u)
            {
                if (pipe->read_error())
                    read = pipe->read_error();
                break;
            }
            go_through(*u);
            pipe->release();
        }
        if (failed())
            pipe->cancel();  // a fatal line: the worker stops at once
        return true;
    }

    // A unit's lines in order: the end of the carried line, the whole lines with their scans,
    // the start of the next carried line.
    void go_through(detail::scan_unit& u)
    {
        feed_lines(u.bytes.substr(0, u.whole_begin));
        std::size_t at = u.whole_begin;
        // The id table's slots for this unit's lines (a unit has about a hundred), ahead of the
        // inserts: the table is larger than this core's cache share.
        for (std::size_t i = 0; i < u.count; ++i)
            by_id.prefetch(u.scans[i].id_hash);
        for (std::size_t i = 0; i < u.count && !failed(); ++i)
        {
            detail::line_scan& scanned = u.scans[i];
            line(u.bytes.substr(at, scanned.size), u.offset + at, true, &scanned);
            at += scanned.size + 1;
        }
        pos += u.whole_end - u.whole_begin;
        if (!failed())
            feed_lines(u.bytes.substr(u.whole_end));
    }

    // Whether the next byte fed starts a line (nothing is carried).
    bool starts_line() const { return carry.empty() && !carry_too_long; }

    void keep_spare(std::string buffer)
    {
        if (buffer.capacity() >= parallel_feed_bytes && spare_buffers.size() < max_spare_buffers)
            spare_buffers.push_back(std::move(buffer));
    }

    std::string take_spare()
    {
        if (spare_buffers.empty())
            return {};
        std::string b = std::move(spare_buffers.back());
        spare_buffers.pop_back();
        return b;
    }

    void feed_lines(std::string_view bytes)
    {
        std::size_t i = 0;
        while (i < bytes.size() && !failed())
        {
            const void* nl = std::memchr(bytes.data() + i, '\n', bytes.size() - i);
            const std::size_t end =
                nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
            const std::string_view piece = bytes.substr(i, end - i);
            if (carry.empty() && !carry_too_long && nl)
                line(piece, pos + i, true);  // the common case: a whole line inside this chunk
            else
            {
                if (carry.empty() && !carry_too_long)
                    carry_offset = pos + i;
                if (!carry_too_long)
                {
                    if (carry.size() + piece.size() > opts.max_line_bytes)
                    {
                        // Do not buffer a runaway line; remember only that it was too long.
                        carry_too_long = true;
                        carry.clear();
                    }
                    else
                        carry.append(piece);
                }
                if (nl)
                    end_carried_line(true);
            }
            i = end + 1;
        }
        pos += bytes.size();
    }

    void end_carried_line(bool terminated)
    {
        if (carry_too_long)
        {
            const std::size_t n = ++line_no;
            report.lines = n;
            bad_line(
                errc::line_too_long,
                n,
                "",
                "line is over the limit of " + std::to_string(opts.max_line_bytes) + " bytes"
            );
        }
        else
            line(carry, carry_offset, terminated);
        carry.clear();
        carry_too_long = false;
    }

    // Reports duplicates, links parents named before they appeared, rejects those that name no
    // entry and cycles (only a parent linked forward can close one), and hands the index over.
    void resolve(session_log& log)
    {
        for (const duplicate& d : duplicates)
        {
            bad_line(
                errc::duplicate_id,
                d.line,
                "id",
                "duplicate id '" + d.id + "' (first used on line " + std::to_string(d.first_line) + ")"
            );
            if (failed())
                return;
        }
        bool linked_forward = false;
        for (pending_parent& pp : pending_parents)
        {
            const std::uint32_t parent = by_id.find(pp.id, metas);
            if (parent == detail::id_index::npos)
            {
                bad_line(
                    errc::dangling_parent,
                    metas[pp.index].line,
                    "parentId",
                    "parentId '" + pp.id + "' names no entry"
                );
                if (failed())
                    return;
                continue;  // tolerant: becomes a root, like Pi's walk that stops at a missing parent
            }
            metas[pp.index].parent = parents[pp.index] = static_cast<std::int32_t>(parent);
            linked_forward = true;
        }
        if (linked_forward && !break_cycles())
            return;
        log.metas_ = std::move(metas);
        log.parents_ = std::move(parents);
        log.kinds_ = std::move(kinds);
        log.by_id_ = std::move(by_id);
        if (header.version < 2)
            log.legacy_first_kept_index_ = std::move(legacy_fk);
    }

    // Iterative colouring, O(n) overall. False once a cycle was fatal.
    bool break_cycles()
    {
        std::vector<std::uint8_t> state(metas.size(), 0);  // 0 new, 1 on the current walk, 2 done
        std::vector<std::size_t> walk;
        for (std::size_t s = 0; s < metas.size(); ++s)
        {
            if (state[s])
                continue;
            walk.clear();
            std::int32_t i = static_cast<std::int32_t>(s);
            while (i >= 0 && state[static_cast<std::size_t>(i)] == 0)
            {
                state[static_cast<std::size_t>(i)] = 1;
                walk.push_back(static_cast<std::size_t>(i));
                i = parents[static_cast<std::size_t>(i)];
            }
            if (i >= 0 && state[static_cast<std::size_t>(i)] == 1)
            {
                auto& m = metas[static_cast<std::size_t>(i)];
                bad_line(
                    errc::parent_cycle,
                    m.line,
                    "parentId",
                    "parentId links of entry '" + m.id + "' form a cycle"
                );
                if (failed())
                    return false;
                m.parent = parents[static_cast<std::size_t>(i)] = -1;  // tolerant: break the cycle here
            }
            for (auto w : walk)
                state[w] = 2;
        }
        return true;
    }

    void check_compactions(const session_log& log)
    {
        if (header.version < 2)
            return;
        for (const std::uint32_t i : compactions)
        {
            const auto& m = log.metas_[i];
            bool found = false;
            for (std::int32_t p = m.parent; p >= 0 && !found; p = log.parents_[static_cast<std::size_t>(p)])
                found = log.metas_[static_cast<std::size_t>(p)].id == m.first_kept_entry_id;
            if (!found)
                report.notes.push_back(
                    {errc{},
                     m.line,
                     "line " + std::to_string(m.line) + ": compaction '" + m.id + "' keeps from '" +
                         m.first_kept_entry_id +
                         "', which is not on its path; its context starts at the summary"}
                );
        }
    }
};

session_log_builder::session_log_builder(load_options opts) : impl_(std::make_unique<impl>(opts)) {}
session_log_builder::~session_log_builder() = default;

bool session_log_builder::feed(std::string_view bytes)
{
    if (!impl_->failed())
        impl_->feed(bytes);
    return !impl_->failed();
}

bool session_log_builder::feed_owned(std::string&& chunk)
{
    if (!impl_->failed())
        impl_->feed_owned(std::move(chunk));
    return !impl_->failed();
}

result<void> session_log_builder::feed_from(const byte_source& source, std::size_t chunk_bytes)
{
    if (impl_->failed())
        return {};
    return impl_->feed_from(source, chunk_bytes);
}

std::string session_log_builder::spare_buffer()
{
    return impl_->take_spare();
}

result<session_log> session_log_builder::finish(
    std::shared_ptr<const line_reader> reader, load_report& report, diagnostics& diag
)
{
    impl& s = *impl_;
    if (!s.failed() && (!s.carry.empty() || s.carry_too_long))
        s.end_carried_line(false);
    if (!s.failed() && !s.have_header)
    {
        if (s.report.torn)
            s.fail(
                errc::missing_header, s.report.torn->line, "type", "the session header line is incomplete"
            );
        else
            s.fail(errc::empty_file, 0, "", "the session file is empty");
    }
    session_log log;
    if (!s.failed())
        s.resolve(log);
    if (s.failed())
    {
        diag = s.diag;
        report = std::move(s.report);
        return s.error;
    }
    s.check_compactions(log);
    for (const std::uint32_t i : s.labels)
        apply_label(log.labels_, log.metas_[i]);
    log.header_ = std::move(s.header);
    log.source_version_ = log.header_.version;
    log.opts_ = s.opts;
    log.reader_ = std::move(reader);
    if (!log.metas_.empty())
        log.leaf_ = log.metas_.size() - 1;
    report = std::move(s.report);
    return log;
}

result<session_log> session_log::load(
    std::string text, const load_options& opts, load_report& report, diagnostics& diag
)
{
    session_log_builder b(opts);
    b.feed(text);
    return b.finish(std::make_shared<string_line_reader>(std::move(text)), report, diag);
}

result<std::vector<entry_ptr>> read_active_path(const session_log& log, diagnostics& diag)
{
    std::vector<entry_ptr> out;
    for (const auto i : log.active_path())
    {
        auto e = log.get(i, diag);
        if (!e)
            return e.error();
        out.push_back(std::move(*e));
    }
    return out;
}

}  // namespace agentctx::compaction
