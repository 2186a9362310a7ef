// session_tail: one full load, then only the complete lines appended since.
#include "session_tail.hpp"

#include <agentctx/compaction/entry.hpp>

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

namespace agentctx::cli {

namespace {

// The bytes of `path` from `from` to its end; nullopt when it cannot be opened.
std::optional<std::string> read_from(const std::string& path, std::uint64_t from)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    in.seekg(static_cast<std::streamoff>(from));
    std::string out;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0)
        out.append(buf, static_cast<std::size_t>(in.gcount()));
    return out;
}

}  // namespace

std::optional<tail_error> session_tail::refresh()
{
    std::error_code ec;
    const auto size = std::filesystem::file_size(path_, ec);
    if (ec)
    {
        if (!std::filesystem::exists(path_, ec) && !log_)
            return std::nullopt;  // not written yet: an empty session
        return tail_error{"session_unreadable", "cannot read '" + path_ + "'"};
    }
    if (size < offset_ || (!log_ && offset_ == 0))
    {
        const auto text = read_from(path_, 0);
        if (!text)
            return tail_error{"session_unreadable", "cannot open '" + path_ + "'"};
        return load_whole(*text);
    }
    if (size == offset_)
        return std::nullopt;
    const auto bytes = read_from(path_, offset_);
    if (!bytes)
        return tail_error{"session_unreadable", "cannot open '" + path_ + "'"};
    if (auto err = append_lines(*bytes))
    {
        // The appended lines do not continue the log as read (a rewritten file): read it again.
        const auto text = read_from(path_, 0);
        if (!text)
            return err;
        return load_whole(*text);
    }
    return std::nullopt;
}

std::optional<tail_error> session_tail::load_whole(const std::string& text)
{
    const auto end = text.rfind('\n');
    log_.reset();
    offset_ = 0;
    if (end == std::string::npos)
        return std::nullopt;  // the header is still being written
    compaction::load_report report;
    compaction::diagnostics diag;
    auto loaded = compaction::session_log::load(text.substr(0, end + 1), {}, report, diag);
    if (!loaded)
        return tail_error{
            "session_invalid",
            path_ + ": " + loaded.error().message() + (diag.message.empty() ? "" : ": " + diag.message)};
    log_ = std::move(*loaded);
    offset_ = end + 1;
    ++loads_;
    return std::nullopt;
}

std::optional<tail_error> session_tail::append_lines(const std::string& bytes)
{
    if (!log_)
        return load_whole(bytes);
    std::size_t start = 0;
    for (std::size_t nl; (nl = bytes.find('\n', start)) != std::string::npos; start = nl + 1)
    {
        const std::string_view line(bytes.data() + start, nl - start);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos)
        {
            offset_ += nl + 1 - start;
            continue;
        }
        boost::json::parse_options opts;
        opts.max_depth = log_->options().max_depth;
        boost::system::error_code ec;
        auto v = boost::json::parse(line, ec, {}, opts);
        if (ec || !v.is_object())
            return tail_error{"session_invalid", path_ + ": an appended line is not a JSON object"};
        compaction::diagnostics diag;
        auto e = compaction::decode_entry(std::move(v.as_object()), diag);
        if (!e)
            return tail_error{"session_invalid", path_ + ": " + diag.message};
        if (auto r = log_->append(std::make_shared<compaction::entry>(std::move(*e)), diag); !r)
            return tail_error{"session_invalid", path_ + ": " + diag.message};
        offset_ += nl + 1 - start;
        ++appended_;
    }
    return std::nullopt;
}

}  // namespace agentctx::cli
