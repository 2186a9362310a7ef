// The append-only session tree: an index of every line, entries on demand.
#pragma once

#include <agentctx/compaction/chunked_vector.hpp>
#include <agentctx/compaction/entry.hpp>
#include <agentctx/compaction/error.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace agentctx::compaction {

struct load_options
{
    std::size_t max_line_bytes = 64u * 1024u * 1024u;  ///< longer lines are `line_too_long`
    std::size_t max_depth = 64;                        ///< deeper nesting is `nesting_too_deep`
    bool tolerant = false;  ///< skip corrupt lines (each reported) instead of failing the load
};

/// Something the loader noticed that did not stop it.
struct load_note
{
    errc code{};           ///< what was wrong (for skipped lines) or 0 for plain notes
    std::size_t line = 0;  ///< 1-based line
    std::string message;
};

/// A final line without its newline that does not parse: an append interrupted by a crash.
struct torn_tail
{
    std::uint64_t offset = 0;  ///< where the fragment starts
    std::uint64_t length = 0;  ///< its size in bytes
    std::size_t line = 0;
};

struct load_report
{
    std::size_t lines = 0;                         ///< physical lines read
    int source_version = current_session_version;  ///< the header's version before migration
    std::vector<load_note> skipped_lines;          ///< tolerant mode: corrupt lines left out
    std::vector<load_note> notes;   ///< e.g. a compaction whose firstKeptEntryId is off its path
    std::optional<torn_tail> torn;  ///< see torn_tail
    /// Set by a store that left out a batch a crash cut short: its lines, from the first to the
    /// end of the file (a torn line among them included).
    std::optional<torn_tail> incomplete_batch;
    bool missing_final_newline = false;  ///< last line complete but unterminated
};

/// Reads one line's bytes (without the newline) from where the log was loaded from.
class line_reader
{
public:
    virtual ~line_reader() = default;
    virtual result<std::string> read(std::uint64_t offset, std::size_t length) const = 0;
};

/// Reads the bytes to load, for session_log_builder::feed_from(). The builder's two threads
/// call it, at once and at any offset (as pread(2) can be); the compaction module itself does
/// no I/O.
class byte_source
{
public:
    virtual ~byte_source() = default;
    /// Reads up to `size` bytes at `offset` into `into`: how many were read (0 at or past the end).
    virtual result<std::size_t> read(std::uint64_t offset, char* into, std::size_t size) const = 0;
};

/// A line_reader over text held in memory.
class string_line_reader final : public line_reader
{
public:
    explicit string_line_reader(std::string text) : text_(std::move(text)) {}
    result<std::string> read(std::uint64_t offset, std::size_t length) const override;

private:
    std::string text_;
};

/// What the index knows about an entry without materializing it: enough to walk the tree,
/// find compactions and track the model and thinking level of a path.
struct entry_meta
{
    entry_type type = entry_type::unknown;
    role message_role = role::other;  ///< for message entries
    std::int32_t parent = -1;         ///< index of the parent entry, -1 for a root
    std::uint32_t line = 0;           ///< 1-based line in the file (0 for appended entries)
    std::uint64_t offset = 0;         ///< byte range of the line in the file
    std::uint32_t length = 0;
    std::string id;
    std::string provider;             ///< assistant message provider or model_change provider
    std::string model;                ///< assistant message model or model_change modelId
    std::string thinking_level;       ///< thinking_level_change
    std::string first_kept_entry_id;  ///< compaction
    std::string target_id;            ///< label
    std::string label;                ///< label (empty = clear)
    entry_ptr cached;                 ///< set for appended (and eagerly loaded) entries
};

/// Builds meta data for an entry held in memory (used on append).
entry_meta make_meta(const entry_ptr& e);

/// The inverse for an entry that is not materialized: an index-only stand-in with the type, id,
/// and what projection tracks (thinking level, model, firstKeptEntryId, edit/label target; an
/// assistant stand-in carries its provider and model, no content). No parentId, no raw JSON.
std::shared_ptr<entry> make_stand_in(const entry_meta& m);

/// The session: header, every entry's index data, the parent links and the leaf.
/// Not thread-safe; the runtime owns one per session on its strand.
namespace detail {

/// Entry ids to entry indices, by open addressing over the ids the entries hold (no key copies:
/// a slot is the id's hash and the index; the id is compared in `metas`).
class id_index
{
public:
    static constexpr std::uint32_t npos = 0xFFFFFFFFu;

    void reserve(std::size_t n);
    /// The index of the entry with this id, or npos.
    std::uint32_t find(std::string_view id, const chunked_vector<entry_meta>& metas) const;
    /// Records `index` for `id` unless an entry already has that id: then returns that entry's
    /// index (and records nothing), else npos. Compares only with entries already recorded.
    std::uint32_t insert(std::string_view id, std::uint32_t index, const chunked_vector<entry_meta>& metas)
    {
        return insert(id, hash(id), index, metas);
    }
    /// The same with the id's hash() computed already (the loader's other thread does).
    std::uint32_t insert(
        std::string_view id, std::uint64_t hash, std::uint32_t index, const chunked_vector<entry_meta>& metas
    );

    static std::uint64_t hash(std::string_view id) noexcept;
    /// Brings the slot where an id of this hash goes into the cache ahead of its insert: the
    /// table is larger than a core's cache share, and a load inserts 100k ids in a row.
    void prefetch(std::uint64_t hash) const noexcept
    {
        if (slots_.empty())
            return;
        const std::uint64_t* slot = &slots_[static_cast<std::size_t>(hash >> 32) & (slots_.size() - 1)];
#if defined(__x86_64__) && defined(__GNUC__)
        // Not __builtin_prefetch: GCC deletes a loop that does nothing else but prefetch.
        asm volatile("prefetcht0 %0" : : "m"(*slot));
#else
        __builtin_prefetch(slot);
#endif
    }

private:
    void grow();
    std::vector<std::uint64_t> slots_;  ///< hash's upper half << 32 | index + 1; 0 = empty
    std::size_t size_ = 0;
};

}  // namespace detail

class session_log
{
public:
    session_log() = default;

    /// A new, empty v3 session.
    explicit session_log(session_header header);

    /// Loads a whole file held in memory (tests, tools). The file loader in runtime streams.
    static result<session_log> load(
        std::string text, const load_options& opts, load_report& report, diagnostics& diag
    );

    const session_header& header() const noexcept { return header_; }
    /// The version of the file as read (1, 2 or 3); entries are migrated in memory to v3.
    int source_version() const noexcept { return source_version_; }
    /// The limits it was loaded under: what it will accept again on the next load.
    const load_options& options() const noexcept { return opts_; }
    std::size_t size() const noexcept { return metas_.size(); }
    const entry_meta& meta(std::size_t i) const { return metas_[i]; }
    /// meta(i).type, and whether it is an assistant message, from a packed array: a walk over a
    /// long path that needs only these touches a byte per entry instead of an entry_meta.
    entry_type type_of(std::size_t i) const noexcept { return static_cast<entry_type>(kinds_[i] & 0x7F); }
    bool is_assistant_message(std::size_t i) const noexcept { return (kinds_[i] & 0x80) != 0; }
    std::optional<std::size_t> find(std::string_view id) const;
    bool contains(std::string_view id) const { return find(id).has_value(); }

    /// The current leaf (last entry in file order after load), nullopt for an empty session.
    std::optional<std::size_t> leaf() const noexcept { return leaf_; }
    std::optional<std::string> leaf_id() const;

    /// The label of an entry (the latest `label` entry targeting it; empty or absent clears).
    std::optional<std::string> label_of(std::string_view id) const;

    /// Moves the leaf to an existing entry (Pi's `branch`). Not persisted, as in Pi.
    result<void> branch(std::string_view id, diagnostics& diag);
    /// Moves the leaf before the first entry (Pi's `resetLeaf`, tree navigation back to a first
    /// user message): the active path is empty and the next append is a new root. Not persisted.
    void reset_leaf() noexcept { leaf_.reset(); }

    /// Indices root -> `leaf` in O(path length).
    std::vector<std::uint32_t> path_to(std::optional<std::size_t> leaf) const;
    std::vector<std::uint32_t> active_path() const { return path_to(leaf_); }

    /// Materializes entry `i` (parsing its line on first use). Errors carry the line number.
    result<entry_ptr> get(std::size_t i, diagnostics& diag) const;

    /// The bytes of entry `i`'s line as stored (without the newline): read back from the file
    /// for a loaded entry, JSON.stringify of the entry as written for an appended one.
    result<std::string> line_bytes(std::size_t i, diagnostics& diag) const;

    /// Adds an entry after validation: non-empty unique id, parent present (or null).
    /// Moves the leaf to it. Fails with `migration_required` on a v1/v2 log.
    result<void> append(entry_ptr e, diagnostics& diag);

    /// A fresh 8-hex id unique in this session.
    std::string new_id() const;

    /// The object a v1/v2 line becomes in v3 (ids, parent links, firstKeptEntryId, custom role).
    /// Used by materialization and by the explicit migrate operation.
    void migrate_object(std::size_t i, boost::json::object& o) const;

private:
    friend class session_log_builder;

    session_header header_;
    int source_version_ = current_session_version;
    load_options opts_;
    chunked_vector<entry_meta> metas_;
    /// metas_[i].parent for every i, packed: walking a 100k-entry path touches 400 KB instead of
    /// a 272-byte entry_meta per step (that walk was a fifth of `plan` after the load).
    std::vector<std::int32_t> parents_;
    std::vector<std::uint8_t> kinds_;  ///< per entry: its entry_type, | 0x80 for an assistant message
    std::vector<std::int64_t> legacy_first_kept_index_;  ///< v1 only: firstKeptEntryIndex per entry
    detail::id_index by_id_;
    std::unordered_map<std::string, std::string> labels_;  ///< targetId -> label, file order applied
    std::optional<std::size_t> leaf_;
    std::shared_ptr<const line_reader> reader_;
};

/// Streaming loader: feed the file in chunks of any size, then finish. Memory stays bounded by
/// the index and the longest line, whatever the file size.
class session_log_builder
{
public:
    explicit session_log_builder(load_options opts = {});
    ~session_log_builder();
    session_log_builder(const session_log_builder&) = delete;
    session_log_builder& operator=(const session_log_builder&) = delete;

    /// Feeds the next bytes. Returns false once a fatal error is recorded (further feeds are ignored).
    bool feed(std::string_view bytes);

    /// Feeds `chunk` as feed(std::string_view) does, but takes the buffer: a second thread can
    /// then scan its lines in place instead of in a copy. Chunks of a few MiB suit it best.
    bool feed_owned(std::string&& chunk);

    /// Feeds everything `source` serves, from offset 0, in chunks of `chunk_bytes`. On a
    /// multi-core machine the second thread reads the next chunk while this one goes through
    /// the last. Returns the first read error, if any (nothing after it is fed); finish()
    /// reports the load's own errors as usual.
    result<void> feed_from(const byte_source& source, std::size_t chunk_bytes);

    /// A buffer passed to feed_owned() earlier that is no longer needed (contents unspecified),
    /// or an empty string: read the next chunk into it to save an allocation and page faults.
    std::string spare_buffer();

    /// Ends the input. `reader` must serve the same bytes that were fed, for later materialization.
    result<session_log> finish(
        std::shared_ptr<const line_reader> reader, load_report& report, diagnostics& diag
    );

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

/// The active path with every entry read in full (a planning path holds stand-ins for old ones).
result<std::vector<entry_ptr>> read_active_path(const session_log& log, diagnostics& diag);

}  // namespace agentctx::compaction
