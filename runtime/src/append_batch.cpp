// A batch of messages: validated whole inside one write turn, then written by the store in one step.
#include "append_batch.hpp"

#include "append_check.hpp"
#include "batch_mark.hpp"
#include "context_edit_check.hpp"
#include "reasoning_binding.hpp"
#include "session_core.hpp"

#include <agentctx/compaction/client_values.hpp>
#include <agentctx/compaction/entry.hpp>
#include <agentctx/runtime/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <set>
#include <tuple>
#include <utility>
#include <string>

namespace agentctx::runtime::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using compaction::entry_ptr;

namespace {

using batch_handler = asio::any_completion_handler<append_batch_signature>;

// Never inside the initiating call: through the strand's queue.
void finish(
    batch_handler h, const asio::strand<asio::any_io_executor>& strand, error_code ec, append_batch_result r
)
{
    asio::get_associated_cancellation_slot(h).clear();
    asio::post(strand, asio::append(std::move(h), ec, std::move(r)));
}

// Pi's field order: type, id, parentId, timestamp, then the type's fields.
boost::json::object raw_entry(
    boost::json::object fields,
    const std::string& id,
    const std::optional<std::string>& parent,
    const std::string& now
)
{
    boost::json::object raw;
    const auto* type = fields.if_contains("type");
    raw["type"] = type ? *type : boost::json::value(nullptr);
    raw["id"] = id;
    raw["parentId"] = parent ? boost::json::value(*parent) : boost::json::value(nullptr);
    raw["timestamp"] = now;
    for (auto& kv : fields)
        if (kv.key() != "type" && kv.key() != "id" && kv.key() != "parentId" && kv.key() != "timestamp")
            raw[kv.key()] = std::move(kv.value());
    return raw;
}

}  // namespace

compaction::result<std::vector<entry_ptr>> prepare_batch(
    const compaction::session_log& log,
    std::vector<boost::json::object> fields,
    std::optional<std::string> parent,
    std::string& reason
)
{
    std::vector<entry_ptr> out;
    std::set<std::string> ids;
    const std::string now = compaction::iso_timestamp_now();
    std::string first;
    for (std::size_t i = 0; i < fields.size(); ++i)
    {
        std::string id = log.new_id();
        while (ids.count(id))
            id = log.new_id();
        if (i == 0)
            first = id;
        compaction::diagnostics diag;
        auto raw = raw_entry(std::move(fields[i]), id, parent, now);
        mark_batch_entry(raw, i, fields.size(), first);  // a load sets aside a batch a crash cut short
        auto e = compaction::result<compaction::entry>(compaction::errc::wrong_type);
        if (auto edit = check_context_edit(log, raw, diag); !edit)
            e = compaction::result<compaction::entry>(edit.error());
        else if (auto values = compaction::check_client_values(raw, diag); !values)
            e = compaction::result<compaction::entry>(values.error());
        else
            e = compaction::decode_entry(std::move(raw), diag);
        if (e && i == 0)
            if (auto ok = check_appendable(log, *e, diag); !ok)
                e = compaction::result<compaction::entry>(ok.error());
        if (!e)
        {
            reason = "[" + std::to_string(i) + "] " + diag.message;
            return e.error();
        }
        ids.insert(id);
        parent = id;
        out.push_back(std::make_shared<const compaction::entry>(std::move(*e)));
    }
    return out;
}

void append_entries(
    std::shared_ptr<session_core> core, std::vector<boost::json::object> fields, batch_handler h
)
{
    auto strand = core->strand();
    asio::post(strand, [self = std::move(core), fields = std::move(fields), h = std::move(h)]() mutable {
        if (self->closed())
            return finish(std::move(h), self->strand(), make_error_code(errc::session_closed), {});
        auto ids = std::make_shared<append_batch_result>();
        auto events = std::make_shared<std::vector<reasoning_transformed_event>>();
        auto prepare = [self, fields = std::move(fields), ids, events](compaction::diagnostics& diag
                       ) mutable -> compaction::result<commit_plan> {
            if (self->closed())
                return make_error_code(errc::session_closed);
            auto entries = prepare_batch(self->log(), std::move(fields), self->log().leaf_id(), diag.message);
            if (!entries)
                return entries.error();
            for (const auto& e : *entries)
            {
                ids->ids.push_back(e->id);
                if (auto ev = transformed_event(*e))
                    events->push_back(std::move(*ev));
            }
            return commit_plan{std::move(*entries), std::nullopt, nullptr};
        };
        self->writes().async_commit(
            std::move(prepare),
            [self, ids, events, h = std::move(h)](error_code ec, std::string message) mutable {
                if (ec)
                    return finish(
                        std::move(h), self->strand(), ec, append_batch_result{{}, std::move(message)}
                    );
                for (const auto& ev : *events)  // written: what the provider withheld is reported
                    self->emit(ev);
                finish(std::move(h), self->strand(), ec, std::move(*ids));
            }
        );
    });
}

void append_messages(
    std::shared_ptr<session_core> core, std::vector<boost::json::object> messages, batch_handler h
)
{
    std::vector<boost::json::object> fields;
    fields.reserve(messages.size());
    for (auto& m : messages)
        fields.push_back(boost::json::object{{"type", "message"}, {"message", std::move(m)}});
    append_entries(std::move(core), std::move(fields), std::move(h));
}

}  // namespace agentctx::runtime::detail
