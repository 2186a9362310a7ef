// session_log and its streaming builder: line index, id map, parent links, leaf, lazy entries.
#include <agentctx/compaction/session_log.hpp>

#include <agentctx/compaction/json_text.hpp>

#include "exact_json.hpp"
#include "line_indexer.hpp"


#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
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

namespace {

std::uint64_t id_hash(std::string_view id) noexcept
{
    return std::hash<std::string_view>{}(id);
}

}  // namespace

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
    const std::uint64_t tag = id_hash(id) >> 32;
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

std::uint32_t id_index::insert(std::string_view id, std::uint32_t index, const chunked_vector<entry_meta>& metas)
{
    if (2 * (size_ + 1) > slots_.size())
        grow();
    const std::uint64_t tag = id_hash(id) >> 32;
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
        if (i < legacy_first_kept_index_.size() && legacy_first_kept_index_[i] >= 0 && o.contains("firstKeptEntryIndex"))
        {
            // v1 indices count the header as 0 (spec §1.8).
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
            diag.message = "line " + std::to_string(m.line) + ": cannot read the line back: " + text.error().message();
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

// Scanning a line (strict validation plus field capture) is most of a load's CPU and depends on
// the line alone. For a large feed, a second thread scans the later part of its whole lines
// while the caller scans the rest; the caller then goes through every line in order as before,
// taking the scan of a later line from here. Everything else (line numbers, which error comes
// first, tolerant skips) stays sequential, so the result is the same as scanning inline.
//
// Regions are queued: the caller starts the next region before it goes through the lines of the
// previous one, so the second thread is not idle while the caller does the bookkeeping.
class prescanner
{
public:
    struct line_scan
    {
        const char* at = nullptr;
        std::size_t size = 0;
        errc code{};
        std::string message;
        detail::line_fields fields;
    };

    // Whole lines (each ending in '\n') to scan, and their scans once done. Jobs are recycled:
    // their scans keep the capacity of their strings.
    struct job
    {
        std::string buffer;  // owns the bytes `region` points into
        std::string_view region;
        std::uint64_t offset = 0;  // file offset of region[0]
        std::vector<line_scan> results;
        std::size_t count = 0;
        std::size_t cursor = 0;
        std::atomic<bool> done{false};
        // A read job fills `buffer` from `source` instead (up to `read_size` bytes at file
        // offset `offset`) and reports what the read did.
        const byte_source* source = nullptr;
        std::size_t read_size = 0;
        boost::system::error_code read_error;

        // The length of the line at `at` (which ends in '\n' within `left` bytes): from its scan,
        // or by looking. Lines are asked for in file order.
        std::size_t next_line_size(const char* at, std::size_t left)
        {
            if (const line_scan* r = scan_at(at))
                return r->size;
            return static_cast<std::size_t>(static_cast<const char*>(std::memchr(at, '\n', left)) - at);
        }

        // The scan of exactly `line`, if the region had it. Only after wait(); lines are asked
        // for in file order, so a cursor finds them.
        const line_scan* find(std::string_view line)
        {
            const line_scan* r = scan_at(line.data());
            return r && r->size == line.size() ? r : nullptr;
        }

        const line_scan* scan_at(const char* at)
        {
            while (cursor < count && results[cursor].at < at)
                ++cursor;
            return cursor < count && results[cursor].at == at ? &results[cursor] : nullptr;
        }
    };

    explicit prescanner(std::size_t max_depth) : max_depth_(max_depth), thread_([this] { run(); }) {}

    ~prescanner()
    {
        cancel();
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    prescanner(const prescanner&) = delete;
    prescanner& operator=(const prescanner&) = delete;

    // Queues `j`. Its bytes must stay alive and unchanged until wait(j) returns (or the
    // prescanner is destroyed).
    void start(job& j)
    {
        j.count = 0;
        j.cursor = 0;
        j.done.store(false, std::memory_order_relaxed);
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(&j);
        }
        wake_.notify_one();
    }

    // Asks the scans to stop early (their results will not be used). It stays cancelled: the
    // load has failed and starts nothing more.
    void cancel() { cancel_.store(true, std::memory_order_relaxed); }

    void wait(job& j)
    {
        if (j.done.load(std::memory_order_acquire))
            return;
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&j] { return j.done.load(std::memory_order_relaxed); });
    }

private:
    void run()
    {
        std::unique_lock lock(mutex_);
        for (;;)
        {
            wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            if (stop_)
                return;
            job& j = *queue_.front();
            queue_.pop_front();
            lock.unlock();
            std::size_t n = 0;
            try
            {
                n = j.source ? read(j) : scan(j);
            }
            catch (...)
            {
                n = 0;  // out of memory: the caller scans these lines itself
                if (j.source)
                    j.read_error = boost::system::errc::make_error_code(boost::system::errc::not_enough_memory);
            }
            lock.lock();
            j.count = n;
            j.done.store(true, std::memory_order_release);
            done_.notify_all();
        }
    }

    static std::size_t read(job& j)
    {
        j.read_error.clear();
        j.buffer.resize(j.read_size);
        const auto n = j.source->read(j.offset, j.buffer.data(), j.buffer.size());
        if (!n)
            j.read_error = n.error();
        j.buffer.resize(n ? std::min(*n, j.read_size) : 0);
        return 0;
    }

    std::size_t scan(job& j)
    {
        const std::string_view region = j.region;
        std::size_t n = 0;
        std::size_t i = 0;
        while (i < region.size() && !cancel_.load(std::memory_order_relaxed))
        {
            const void* nl = std::memchr(region.data() + i, '\n', region.size() - i);
            if (!nl)
                break;
            const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - region.data());
            if (n == j.results.size())
                j.results.emplace_back();
            line_scan& r = j.results[n];
            r.at = region.data() + i;
            r.size = end - i;
            r.message.clear();
            r.code = detail::line_indexer::scan(std::string_view(r.at, r.size), max_depth_, r.fields, r.message);
            ++n;
            i = end + 1;
        }
        return n;
    }

    std::size_t max_depth_;
    std::atomic<bool> cancel_{false};
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::deque<job*> queue_;
    bool stop_ = false;
    std::thread thread_;  // last: starts once the members above exist
};

// Feeds at least this large are scanned on two threads.
constexpr std::size_t parallel_feed_bytes = 128 * 1024;
// A larger feed is handled in windows of about this size (ending at a newline), which bounds
// what the second thread holds.
constexpr std::size_t parallel_window_bytes = 2 * 1024 * 1024;
// The most of a window's whole lines the caller scans, in sixteenths (see adapt_share()).
constexpr std::size_t max_caller_share = 12;
// Buffers kept for reuse (the caller's next chunks, or the next copies).
constexpr std::size_t max_spare_buffers = 3;

}  // namespace

struct session_log_builder::impl
{
    explicit impl(load_options o) : opts(o), indexer(o.max_depth) {}

    load_options opts;
    detail::line_indexer indexer;
    // Regions handed to `pre`, in file order, and recycled jobs and buffers; declared before
    // it, so that the thread is joined before they go.
    std::deque<std::unique_ptr<prescanner::job>> pending;
    std::vector<std::unique_ptr<prescanner::job>> spare_jobs;
    std::vector<std::string> spare_buffers;
    std::unique_ptr<prescanner> pre;  // created by the first large feed on a multi-core machine
    prescanner::job* draining = nullptr;  // drain() is going through this job's lines
    std::size_t caller_share = 4;  // sixteenths of a window's whole lines this thread scans (adapt_share())

    // index() of the line, or the second thread's scan of it.
    result<const detail::line_fields*> index_line(std::string_view text, diagnostics& d)
    {
        if (draining)
            if (const auto* r = draining->find(text))
            {
                if (r->code != errc{})
                {
                    d.message = r->message;
                    return r->code;
                }
                return &r->fields;
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
    chunked_vector<entry_meta> metas;
    std::vector<std::string> parent_ids;  // unresolved, parallel to metas ("" with has_parent false)
    std::vector<bool> has_parent;
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

    void header_line(std::string_view text, std::size_t line)
    {
        diagnostics d;
        auto idx = index_line(text, d);  // same validation and error codes as entries
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
            bool taken = false;
            for (std::size_t i = 0; i < metas.size(); ++i)  // v1 files are small and rare; linear check is fine
                if (metas[i].id == id)
                {
                    taken = true;
                    break;
                }
            if (!taken)
                return id;
            h = h * 16777619u + 1;
        }
    }

    void line(std::string_view text, std::uint64_t offset, bool terminated)
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
        }
        if (const auto blank = detail::classify_blank(text); blank != detail::blank_kind::not_blank)
        {
            // Pi skips lines whose trim() is empty; trim() knows all of JavaScript's whitespace.
            if (blank == detail::blank_kind::js_blank)
                note(n, "only whitespace (in JavaScript's sense), skipped as Pi does");
            // An unterminated blank tail must get its newline before the next append, or the
            // appended line would start with it (and non-JSON whitespace breaks JSON.parse).
            if (!terminated && !text.empty())
                report.missing_final_newline = true;
            return;
        }
        if (!have_header)
            return header_line(text, n);

        diagnostics d;
        auto idx = index_line(text, d);
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
        const detail::line_fields& f = **idx;
        const bool v1 = header.version < 2;
        if (!f.is_object)
            return bad_line(errc::wrong_type, n, "", "expected a JSON object");
        if (f.type_kind != seen::string)
            return bad_line(
                f.type_kind == seen::absent ? errc::missing_field : errc::wrong_type,
                n,
                "type",
                "field 'type': expected string"
            );
        if (f.type == "session")
            return bad_line(errc::wrong_type, n, "type", "a second session header");
        if (!v1 && (f.id_kind != seen::string || f.id.empty()))
            return bad_line(
                f.id_kind == seen::absent ? errc::missing_field : errc::wrong_type,
                n,
                "id",
                "field 'id': expected a non-empty string"
            );
        if (!v1 && f.parent_kind != seen::string && f.parent_kind != seen::null && f.parent_kind != seen::absent)
            return bad_line(errc::wrong_type, n, "parentId", "field 'parentId': expected string or null");
        if (f.type == "message" && f.message_kind != seen::object)
            return bad_line(
                f.message_kind == seen::absent ? errc::missing_field : errc::wrong_type,
                n,
                "message",
                "field 'message': expected object"
            );

        entry_meta m;
        m.type = entry_type_from_string(f.type);
        m.line = static_cast<std::uint32_t>(n);
        m.offset = offset;
        m.length = static_cast<std::uint32_t>(text.size());
        if (m.type == entry_type::message)
        {
            m.message_role = role_from_string(f.role);
            if (m.message_role == role::assistant)
            {
                m.provider = f.message_provider;
                m.model = f.message_model;
            }
        }
        else if (m.type == entry_type::model_change)
        {
            m.provider = f.provider;
            m.model = f.model_id;
        }
        m.thinking_level = f.thinking_level;
        m.first_kept_entry_id = f.first_kept_entry_id;
        if (m.type == entry_type::label)
        {
            m.target_id = f.target_id;
            m.label = f.label_kind == seen::string ? f.label : std::string();
        }
        else if (m.type == entry_type::context_edit)
            m.target_id = f.target_id;
        if (v1)
        {
            m.id = synthetic_id(n);
            parent_ids.push_back(metas.empty() ? std::string() : metas.back().id);
            has_parent.push_back(!metas.empty());
            legacy_fk.push_back(f.first_kept_entry_index.value_or(-1));
        }
        else
        {
            m.id = f.id;
            parent_ids.push_back(f.parent_kind == seen::string ? f.parent_id : std::string());
            has_parent.push_back(f.parent_kind == seen::string);
        }
        metas.push_back(std::move(m));
    }

    void feed(std::string_view bytes)
    {
        if (bytes.size() < parallel_feed_bytes || !two_cores())
        {
            drain();
            return feed_lines(bytes);
        }
        while (!bytes.empty() && !failed())
        {
            // Windows end at a newline, so no line is carried from one to the next.
            std::size_t n = bytes.size();
            if (n > parallel_window_bytes + parallel_window_bytes / 2)
                if (const void* nl = std::memchr(bytes.data() + parallel_window_bytes, '\n', n - parallel_window_bytes))
                    n = static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1;
            feed_window(bytes.substr(0, n), nullptr);
            bytes.remove_prefix(n);
        }
    }

    // As feed(), but the second thread scans the chunk's bytes where they are: the chunk
    // becomes the buffer of its region instead of a copy.
    void feed_owned(std::string&& chunk)
    {
        if (chunk.size() < parallel_feed_bytes || !two_cores())
        {
            drain();
            feed_lines(chunk);
            keep_spare(std::move(chunk));
            return;
        }
        auto j = take_job();
        j->buffer = std::move(chunk);
        const std::string_view bytes = j->buffer;  // taken after the move: the job owns the bytes now
        feed_window(bytes, std::move(j));
    }

    result<void> feed_from(const byte_source& source, std::size_t chunk_bytes)
    {
        chunk_bytes = std::max<std::size_t>(chunk_bytes, 1);
        if (!two_cores() || !have_prescanner())
            return read_inline(source, chunk_bytes);
        std::unique_ptr<prescanner::job> next = start_read(source, 0, chunk_bytes);
        std::uint64_t offset = 0;
        // Whatever happens, a queued read must end before its job goes.
        struct wait_for
        {
            prescanner& pre;
            std::unique_ptr<prescanner::job>& job;
            ~wait_for()
            {
                if (job)
                    pre.wait(*job);
            }
        } guard{*pre, next};
        while (!failed())
        {
            pre->wait(*next);
            if (next->read_error)
                return next->read_error;
            if (next->buffer.empty())
                break;
            offset += next->buffer.size();
            // The second thread reads the chunk after this one before it scans this one: this
            // thread needs it first.
            auto current = std::exchange(next, start_read(source, offset, chunk_bytes));
            feed_owned(std::move(current->buffer));
            recycle(std::move(current));
        }
        return {};
    }

    // feed_from() without a second thread.
    result<void> read_inline(const byte_source& source, std::size_t chunk_bytes)
    {
        std::uint64_t offset = 0;
        while (!failed())
        {
            std::string chunk = take_spare();
            chunk.resize(chunk_bytes);
            const auto n = source.read(offset, chunk.data(), chunk.size());
            if (!n)
                return n.error();
            if (*n == 0)
                break;
            chunk.resize(std::min(*n, chunk_bytes));
            offset += chunk.size();
            feed_owned(std::move(chunk));
        }
        return {};
    }

    // Queues a read of up to `size` bytes at `offset` into a spare buffer.
    std::unique_ptr<prescanner::job> start_read(const byte_source& source, std::uint64_t offset, std::size_t size)
    {
        auto j = take_job();
        j->buffer = take_spare();
        j->source = &source;
        j->offset = offset;
        j->read_size = size;
        pre->start(*j);
        return j;
    }

    bool have_prescanner()
    {
        try
        {
            if (!pre)
                pre = std::make_unique<prescanner>(opts.max_depth);
            return true;
        }
        catch (const std::exception&)
        {
            return false;  // no thread to be had
        }
    }

    static bool two_cores()
    {
        static const bool yes = std::thread::hardware_concurrency() > 1;
        return yes;
    }

    // Hands the later part of the window's whole lines to the second thread, goes through the
    // lines before it, and returns while the second thread scans (the caller, or the second
    // thread itself in feed_from(), gets the next chunk meanwhile). The next feed (or finish)
    // goes through the handed-over lines first. `owner`, if any, holds the window's bytes;
    // otherwise they are copied.
    void feed_window(std::string_view bytes, std::unique_ptr<prescanner::job> owner)
    {
        // Whole lines start after the line carried in from the previous feed, if any.
        std::size_t first = 0;
        if (!carry.empty() || carry_too_long)
        {
            const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
            first = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1 : bytes.size();
        }
        const void* last_nl = first < bytes.size() ? ::memrchr(bytes.data() + first, '\n', bytes.size() - first) : nullptr;
        const std::size_t end = last_nl ? static_cast<std::size_t>(static_cast<const char*>(last_nl) - bytes.data()) + 1 : first;
        const std::size_t split = caller_share_end(bytes, first, end, caller_share);
        if (split >= end || !start_prescan(bytes.substr(split, end - split), pos + split, owner))
        {
            drain();
            feed_lines(bytes);
            if (owner)
                recycle(std::move(owner));
            return;
        }
        // The earlier regions are gone through while the second thread already scans this one.
        drain(1);
        feed_lines(bytes.substr(0, split));
        pos += end - split;  // the handed-over lines, gone through by drain()
        feed_lines(bytes.substr(end));  // the start of a line that continues in the next feed
    }

    // Where this thread's share (in sixteenths) of the whole lines [first, end) ends; the second
    // thread scans the rest.
    static std::size_t caller_share_end(std::string_view bytes, std::size_t first, std::size_t end, std::size_t share)
    {
        if (end - first < parallel_feed_bytes / 2)
            return end;  // too little to be worth a handoff
        const std::size_t mid = first + (end - first) * share / 16;
        if (mid == first)
            return first;
        const void* nl = std::memchr(bytes.data() + mid, '\n', end - mid);
        return nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data()) + 1 : end;
    }

    // Queues `region` (whole lines at file offset `offset`) for the second thread: in `owner`'s
    // buffer, or in a copy if there is no owner.
    bool start_prescan(std::string_view region, std::uint64_t offset, std::unique_ptr<prescanner::job>& owner)
    {
        try
        {
            if (!have_prescanner())
                return false;
            if (!owner)
            {
                owner = take_job();
                owner->buffer = take_spare();
                owner->buffer.assign(region);
                region = owner->buffer;
            }
            pending.push_back(nullptr);
        }
        catch (const std::exception&)
        {
            return false;  // no thread (or no memory) to be had: scan inline
        }
        owner->region = region;
        owner->offset = offset;
        pre->start(*owner);
        pending.back() = std::move(owner);
        return true;
    }

    // Goes through the lines handed to the second thread, oldest first, with its scans, until
    // `keep` regions are left.
    void drain(std::size_t keep = 0)
    {
        while (pending.size() > keep)
        {
            std::unique_ptr<prescanner::job> j = std::move(pending.front());
            pending.pop_front();
            drain_job(*j);
            recycle(std::move(j));
        }
    }

    void drain_job(prescanner::job& j)
    {
        if (failed())
            pre->cancel();  // an earlier line was fatal: these lines are never looked at
        adapt_share(j.done.load(std::memory_order_acquire));
        pre->wait(j);
        draining = &j;
        struct inactive
        {
            prescanner::job*& active;
            ~inactive() { active = nullptr; }
        } reset{draining};
        const std::string_view bytes = j.region;
        std::size_t i = 0;
        while (i < bytes.size() && !failed())
        {
            // The scans know where their lines end; past them (a cancelled or failed scan), look.
            const std::size_t end = i + j.next_line_size(bytes.data() + i, bytes.size() - i);
            line(bytes.substr(i, end - i), j.offset + i, true);
            i = end + 1;
        }
    }

    // Which thread scans a line does not change the result, only how long the load takes. If the
    // second thread was done before this thread got to its lines, give it more of the next
    // window; if this thread had to wait, take more itself.
    void adapt_share(bool scanned_already)
    {
        if (scanned_already && caller_share > 0)
            --caller_share;
        else if (!scanned_already && caller_share < max_caller_share)
            ++caller_share;
    }

    std::unique_ptr<prescanner::job> take_job()
    {
        if (spare_jobs.empty())
            return std::make_unique<prescanner::job>();
        auto j = std::move(spare_jobs.back());
        spare_jobs.pop_back();
        return j;
    }

    // A buffer for the next chunk: one the second thread is done with, or an empty string.
    std::string take_spare()
    {
        if (spare_buffers.empty())
            return {};
        std::string b = std::move(spare_buffers.back());
        spare_buffers.pop_back();
        return b;
    }

    void keep_spare(std::string buffer)
    {
        if (buffer.capacity() >= parallel_feed_bytes && spare_buffers.size() < max_spare_buffers)
            spare_buffers.push_back(std::move(buffer));
    }

    void recycle(std::unique_ptr<prescanner::job> j)
    {
        keep_spare(std::move(j->buffer));
        j->buffer = std::string();
        j->region = {};
        j->source = nullptr;
        spare_jobs.push_back(std::move(j));
    }

    void feed_lines(std::string_view bytes)
    {
        std::size_t i = 0;
        while (i < bytes.size() && !failed())
        {
            const void* nl = std::memchr(bytes.data() + i, '\n', bytes.size() - i);
            const std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data())
                                       : bytes.size();
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

    // Resolves ids and parents, rejects duplicates, dangling parents and cycles.
    void resolve(session_log& log)
    {
        log.by_id_.reserve(metas.size());
        // Duplicates are dropped in place: the index is never copied.
        std::vector<std::size_t> kept_src;  // index into parent_ids for each kept meta
        kept_src.reserve(metas.size());
        for (std::size_t i = 0; i < metas.size(); ++i)
        {
            const std::size_t k = kept_src.size();
            const std::uint32_t first = log.by_id_.insert(metas[i].id, static_cast<std::uint32_t>(k), metas);
            if (first != detail::id_index::npos)
            {
                const std::string what = "duplicate id '" + metas[i].id + "' (first used on line " +
                                         std::to_string(metas[first].line) + ")";
                bad_line(errc::duplicate_id, metas[i].line, "id", what);
                if (failed())
                    return;
                continue;
            }
            if (k != i)
                metas[k] = std::move(metas[i]);
            kept_src.push_back(i);
        }
        metas.truncate(kept_src.size());
        auto& kept = metas;
        for (std::size_t k = 0; k < kept.size(); ++k)
        {
            const std::size_t src = kept_src[k];
            if (!has_parent[src])
                continue;
            // Almost every parent is the line before: check it before hashing.
            if (k > 0 && kept[k - 1].id == parent_ids[src])
            {
                kept[k].parent = static_cast<std::int32_t>(k - 1);
                continue;
            }
            const std::uint32_t parent = log.by_id_.find(parent_ids[src], kept);
            if (parent == detail::id_index::npos)
            {
                bad_line(
                    errc::dangling_parent,
                    kept[k].line,
                    "parentId",
                    "parentId '" + parent_ids[src] + "' names no entry"
                );
                if (failed())
                    return;
                continue;  // tolerant: becomes a root, like Pi's walk that stops at a missing parent
            }
            kept[k].parent = static_cast<std::int32_t>(parent);
        }
        std::vector<std::int32_t> parents(kept.size());
        for (std::size_t k = 0; k < kept.size(); ++k)
            parents[k] = kept[k].parent;
        // Cycle check: iterative colouring, O(n) overall.
        std::vector<std::uint8_t> state(kept.size(), 0);  // 0 new, 1 on the current walk, 2 done
        std::vector<std::size_t> walk;
        for (std::size_t s = 0; s < kept.size(); ++s)
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
                auto& m = kept[static_cast<std::size_t>(i)];
                bad_line(errc::parent_cycle, m.line, "parentId", "parentId links of entry '" + m.id + "' form a cycle");
                if (failed())
                    return;
                m.parent = parents[static_cast<std::size_t>(i)] = -1;  // tolerant: break the cycle here
            }
            for (auto w : walk)
                state[w] = 2;
        }
        if (header.version < 2)
        {
            log.legacy_first_kept_index_.reserve(kept.size());
            for (auto src : kept_src)
                log.legacy_first_kept_index_.push_back(legacy_fk[src]);
        }
        log.metas_ = std::move(metas);
        log.parents_ = std::move(parents);
    }

    void check_compactions(const session_log& log)
    {
        for (std::size_t i = 0; i < log.metas_.size(); ++i)
        {
            const auto& m = log.metas_[i];
            if (m.type != entry_type::compaction || header.version < 2)
                continue;
            bool found = false;
            for (std::int32_t p = m.parent; p >= 0 && !found; p = log.parents_[static_cast<std::size_t>(p)])
                found = log.metas_[static_cast<std::size_t>(p)].id == m.first_kept_entry_id;
            if (!found)
                report.notes.push_back(
                    {errc{},
                     m.line,
                     "line " + std::to_string(m.line) + ": compaction '" + m.id + "' keeps from '" +
                         m.first_kept_entry_id +
                         "', which is not on its path; its context starts at the summary (spec §2.7)"}
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
    std::shared_ptr<const line_reader> reader,
    load_report& report,
    diagnostics& diag
)
{
    impl& s = *impl_;
    s.drain();
    if (!s.failed() && (!s.carry.empty() || s.carry_too_long))
        s.end_carried_line(false);
    if (!s.failed() && !s.have_header)
    {
        if (s.report.torn)
            s.fail(errc::missing_header, s.report.torn->line, "type", "the session header line is incomplete");
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
    for (std::size_t i = 0; i < log.metas_.size(); ++i)
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

result<session_log> session_log::load(std::string text, const load_options& opts, load_report& report, diagnostics& diag)
{
    session_log_builder b(opts);
    b.feed(text);
    return b.finish(std::make_shared<string_line_reader>(std::move(text)), report, diag);
}

}  // namespace agentctx::compaction
