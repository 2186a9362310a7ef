// SAX indexing of one session line: validation plus the handful of fields the tree needs.
#include "line_indexer.hpp"

#include <agentctx/compaction/json_text.hpp>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>

namespace agentctx::compaction::detail {

void line_fields::clear()
{
    is_object = false;
    type_kind = id_kind = parent_kind = message_kind = seen::absent;
    type.clear();
    id.clear();
    parent_id.clear();
    thinking_level.clear();
    provider.clear();
    model_id.clear();
    first_kept_entry_id.clear();
    role.clear();
    message_provider.clear();
    message_model.clear();
    first_kept_entry_index.reset();
}

bool line_handler::on_document_begin(boost::system::error_code&)
{
    fields.clear();
    depth_ = 0;
    in_message_ = false;
    key_.clear();
    key_depth_ = 0;
    target_ = nullptr;
    kind_target_ = nullptr;
    fk_index_ = false;
    return true;
}

void line_handler::begin_value()
{
    target_ = nullptr;
    kind_target_ = nullptr;
    fk_index_ = false;
    if (key_depth_ != depth_)
        return;  // an array element, or the document itself
    if (depth_ == 1)
    {
        if (key_ == "type")
        {
            target_ = &fields.type;
            kind_target_ = &fields.type_kind;
        }
        else if (key_ == "id")
        {
            target_ = &fields.id;
            kind_target_ = &fields.id_kind;
        }
        else if (key_ == "parentId")
        {
            target_ = &fields.parent_id;
            kind_target_ = &fields.parent_kind;
        }
        else if (key_ == "message")
            kind_target_ = &fields.message_kind;
        else if (key_ == "thinkingLevel")
            target_ = &fields.thinking_level;
        else if (key_ == "provider")
            target_ = &fields.provider;
        else if (key_ == "modelId")
            target_ = &fields.model_id;
        else if (key_ == "firstKeptEntryId")
            target_ = &fields.first_kept_entry_id;
        else if (key_ == "firstKeptEntryIndex")
            fk_index_ = true;
    }
    else if (depth_ == 2 && in_message_)
    {
        if (key_ == "role")
            target_ = &fields.role;
        else if (key_ == "provider")
            target_ = &fields.message_provider;
        else if (key_ == "model")
            target_ = &fields.message_model;
    }
}

void line_handler::scalar(seen kind)
{
    begin_value();
    if (kind_target_)
        *kind_target_ = kind;
}

bool line_handler::on_object_begin(boost::system::error_code&)
{
    if (depth_ == 0)
        fields.is_object = true;
    begin_value();
    if (kind_target_)
        *kind_target_ = seen::object;
    const bool entering_message = depth_ == 1 && key_depth_ == 1 && key_ == "message";
    ++depth_;
    if (depth_ == 2)
        in_message_ = entering_message;
    return true;
}

bool line_handler::on_object_end(std::size_t, boost::system::error_code&)
{
    --depth_;
    if (depth_ < 2)
        in_message_ = false;
    key_depth_ = -1;  // the enclosing object's next key will reset it
    return true;
}

bool line_handler::on_array_begin(boost::system::error_code&)
{
    scalar(seen::other);
    ++depth_;
    return true;
}

bool line_handler::on_array_end(std::size_t, boost::system::error_code&)
{
    --depth_;
    key_depth_ = -1;
    return true;
}

bool line_handler::on_key_part(boost::json::string_view s, std::size_t n, boost::system::error_code&)
{
    if (n == s.size())
        key_.clear();  // first part of a new key
    key_.append(s.data(), s.size());
    return true;
}

bool line_handler::on_key(boost::json::string_view s, std::size_t n, boost::system::error_code&)
{
    if (n == s.size())
        key_.clear();
    key_.append(s.data(), s.size());
    key_depth_ = depth_;
    return true;
}

bool line_handler::on_string_part(boost::json::string_view s, std::size_t n, boost::system::error_code&)
{
    if (n == s.size())
    {
        begin_value();
        if (target_)
            target_->clear();
    }
    if (target_)
        target_->append(s.data(), s.size());
    return true;
}

bool line_handler::on_string(boost::json::string_view s, std::size_t n, boost::system::error_code&)
{
    if (n == s.size())
    {
        begin_value();
        if (target_)
            target_->clear();
    }
    if (target_)
        target_->append(s.data(), s.size());
    if (kind_target_)
        *kind_target_ = seen::string;
    target_ = nullptr;
    kind_target_ = nullptr;
    return true;
}

bool line_handler::on_int64(std::int64_t v, boost::json::string_view, boost::system::error_code&)
{
    scalar(seen::other);
    if (fk_index_)
        fields.first_kept_entry_index = v;
    return true;
}

bool line_handler::on_uint64(std::uint64_t, boost::json::string_view, boost::system::error_code&)
{
    scalar(seen::other);
    return true;
}

bool line_handler::on_double(double v, boost::json::string_view, boost::system::error_code&)
{
    scalar(seen::other);
    if (fk_index_)
        fields.first_kept_entry_index = static_cast<std::int64_t>(v);
    return true;
}

bool line_handler::on_bool(bool, boost::system::error_code&)
{
    scalar(seen::other);
    return true;
}

bool line_handler::on_null(boost::system::error_code&)
{
    scalar(seen::null);
    return true;
}

namespace {

boost::json::parse_options parser_options(std::size_t max_depth)
{
    boost::json::parse_options o;
    o.max_depth = max_depth;
    return o;
}

}  // namespace

line_indexer::line_indexer(std::size_t max_depth) : parser_(parser_options(max_depth)) {}

result<const line_fields*> line_indexer::index(std::string_view line, diagnostics& diag)
{
    parser_.reset();
    boost::system::error_code ec;
    const std::size_t n = parser_.write_some(false, line.data(), line.size(), ec);
    if (!ec && n != line.size())
        ec = boost::json::error::extra_data;
    if (ec)
    {
        if (ec == boost::json::error::too_deep)
        {
            diag.message = "nesting deeper than the configured limit";
            return errc::nesting_too_deep;
        }
        if (!is_valid_utf8(line))
        {
            diag.message = "text is not valid UTF-8";
            return errc::invalid_utf8;
        }
        diag.message = "invalid JSON at byte " + std::to_string(n + 1) + " (" + ec.message() + ")";
        return errc::invalid_json;
    }
    return &parser_.handler().fields;
}

}  // namespace agentctx::compaction::detail
