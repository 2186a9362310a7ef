// A DOM builder over boost::json::basic_parser that converts doubles from their exact text.
#include "exact_json.hpp"

#include <agentctx/compaction/error.hpp>

#include <boost/json/array.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <string>
#include <vector>

namespace agentctx::compaction::detail {

namespace {

class dom_handler
{
public:
    static constexpr std::size_t max_object_size = std::size_t(-1);
    static constexpr std::size_t max_array_size = std::size_t(-1);
    static constexpr std::size_t max_key_size = std::size_t(-1);
    static constexpr std::size_t max_string_size = std::size_t(-1);

    boost::json::value result;
    bool unique_keys = false;   ///< refuse an object that names a key twice
    std::string duplicate_key;  ///< the key that was repeated

    bool on_document_begin(boost::system::error_code&) { return true; }
    bool on_document_end(boost::system::error_code&) { return true; }

    bool on_object_begin(boost::system::error_code&)
    {
        stack_.push_back({boost::json::object(), take_key()});
        return true;
    }
    bool on_object_end(std::size_t, boost::system::error_code&) { return close(); }
    bool on_array_begin(boost::system::error_code&)
    {
        stack_.push_back({boost::json::array(), take_key()});
        return true;
    }
    bool on_array_end(std::size_t, boost::system::error_code&) { return close(); }

    bool on_key_part(boost::json::string_view s, std::size_t, boost::system::error_code&)
    {
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_key(boost::json::string_view s, std::size_t, boost::system::error_code& ec)
    {
        key_.append(s.data(), s.size());
        has_key_ = true;
        // The object's earlier members are already in it: a repeat is seen at its key.
        if (unique_keys && !stack_.empty() && stack_.back().container.get_object().contains(key_))
        {
            duplicate_key = key_;
            ec = make_error_code(errc::duplicate_key);
            return false;
        }
        return true;
    }
    bool on_string_part(boost::json::string_view s, std::size_t, boost::system::error_code&)
    {
        str_.append(s.data(), s.size());
        return true;
    }
    bool on_string(boost::json::string_view s, std::size_t, boost::system::error_code&)
    {
        str_.append(s.data(), s.size());
        add(boost::json::value(boost::json::string(str_)));
        str_.clear();
        return true;
    }
    bool on_number_part(boost::json::string_view s, boost::system::error_code&)
    {
        num_.append(s.data(), s.size());
        return true;
    }
    bool on_int64(std::int64_t v, boost::json::string_view, boost::system::error_code&)
    {
        num_.clear();
        add(v);
        return true;
    }
    bool on_uint64(std::uint64_t v, boost::json::string_view, boost::system::error_code&)
    {
        num_.clear();
        add(v);
        return true;
    }
    bool on_double(double d, boost::json::string_view s, boost::system::error_code&)
    {
        num_.append(s.data(), s.size());
        double exact = d;
        const auto r = std::from_chars(num_.data(), num_.data() + num_.size(), exact);
        if (r.ec != std::errc{})
            exact = d;  // out of range: keep Boost's (infinite or zero) value
        num_.clear();
        add(exact);
        return true;
    }
    bool on_bool(bool b, boost::system::error_code&)
    {
        add(b);
        return true;
    }
    bool on_null(boost::system::error_code&)
    {
        add(nullptr);
        return true;
    }
    bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

private:
    struct frame
    {
        boost::json::value container;
        std::string key;  // this container's key in its parent object
    };

    std::string take_key()
    {
        std::string k = std::move(key_);
        key_.clear();
        has_key_ = false;
        return k;
    }

    void add(boost::json::value v)
    {
        if (stack_.empty())
        {
            result = std::move(v);
            return;
        }
        auto& top = stack_.back().container;
        if (top.is_object())
            // Later duplicates replace earlier ones, as JSON.parse does.
            top.get_object()[take_key()] = std::move(v);
        else
            top.get_array().push_back(std::move(v));
    }

    bool close()
    {
        frame f = std::move(stack_.back());
        stack_.pop_back();
        key_ = std::move(f.key);
        add(std::move(f.container));
        return true;
    }

    std::vector<frame> stack_;
    std::string key_, str_, num_;
    bool has_key_ = false;
};

}  // namespace

boost::json::value parse_exact(
    std::string_view text,
    std::size_t max_depth,
    boost::system::error_code& ec,
    std::size_t* consumed,
    std::string* duplicate_key
)
{
    boost::json::parse_options opts;
    opts.max_depth = max_depth;
    boost::json::basic_parser<dom_handler> p(opts);
    p.handler().unique_keys = duplicate_key != nullptr;
    const std::size_t n = p.write_some(false, text.data(), text.size(), ec);
    if (duplicate_key && ec == make_error_code(errc::duplicate_key))
        *duplicate_key = std::move(p.handler().duplicate_key);
    if (consumed)
        *consumed = n;
    if (!ec && n != text.size())
        ec = boost::json::error::extra_data;
    if (ec)
        return nullptr;
    return std::move(p.handler().result);
}

}  // namespace agentctx::compaction::detail
