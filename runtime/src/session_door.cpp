// The public session, a door: open and create, then every operation forwarded to the core on its strand.
#include <agentctx/runtime/session.hpp>

#include <agentctx/compaction/unresolved_calls.hpp>

#include "append_batch.hpp"
#include "history_replacement.hpp"
#include "session_core.hpp"

namespace agentctx::runtime {

using detail::session_core;

session::session(std::shared_ptr<session_core> core) : core_(std::move(core)) {}

session::~session() = default;

result<std::shared_ptr<session>> session::open(
    executor_type ex,
    std::unique_ptr<store> st,
    session_config config,
    diagnostics& diag,
    compaction::load_report* report
)
{
    compaction::load_report local;
    auto log = st->load(config.load, report ? *report : local, diag);
    if (!log)
        return log.error();
    auto core =
        std::make_shared<session_core>(std::move(ex), std::move(st), std::move(config), std::move(*log));
    if (auto r = core->start_up(diag); !r)
        return r.error();
    return std::shared_ptr<session>(new session(std::move(core)));
}

result<std::shared_ptr<session>> session::create(
    executor_type ex,
    std::unique_ptr<store> st,
    const compaction::session_header& header,
    session_config config,
    diagnostics& diag
)
{
    if (auto r = st->write_header(header, diag); !r)
        return r.error();
    return open(std::move(ex), std::move(st), std::move(config), diag);
}

std::shared_ptr<const snapshot> session::current() const noexcept
{
    return core_->current();
}

std::vector<compaction::context_message> session::context() const
{
    const auto& c = config();
    return compaction::with_unknown_outcomes(
        current()->messages.to_vector(),
        compaction::compat_mode::agentctx,
        c.compat == compaction::compat_mode::pi ? nullptr : &c.jobs
    );
}

session::executor_type session::get_executor() const noexcept
{
    return core_->strand();
}

boost::asio::cancellation_slot session::turn_abort_slot()
{
    return core_->turn_abort_slot();
}

void session::on_event(event_listener l)
{
    core_->hooks().add(std::move(l));
}
void session::on_before_compact(before_compact_hook h)
{
    core_->hooks().add(std::move(h));
}
void session::on_before_compact(async_before_compact_hook h)
{
    core_->hooks().add(std::move(h));
}
void session::on_compacted(compacted_hook h)
{
    core_->hooks().add(std::move(h));
}
void session::on_compacted(async_compacted_hook h)
{
    core_->hooks().add(std::move(h));
}
void session::on_compact_failed(compact_failed_hook h)
{
    core_->hooks().add(std::move(h));
}
void session::on_compact_failed(async_compact_failed_hook h)
{
    core_->hooks().add(std::move(h));
}
void session::on_before_branch(before_branch_hook h)
{
    core_->hooks().branch().add(std::move(h));
}
void session::on_before_branch(async_before_branch_hook h)
{
    core_->hooks().branch().add(std::move(h));
}
void session::on_branched(branched_hook h)
{
    core_->hooks().branch().add(std::move(h));
}
void session::on_branched(async_branched_hook h)
{
    core_->hooks().branch().add(std::move(h));
}

const session_config& session::config() const noexcept
{
    return core_->budgets().given();
}

model_identity session::serving_model() const
{
    return core_->budgets().serving();
}

void session::change_model_impl(model_identity model, boost::asio::any_completion_handler<append_signature> h)
{
    core_->change_model_impl(std::move(model), std::move(h));
}

void session::abort_compaction()
{
    core_->abort_compaction();
}
void session::close()
{
    core_->close();
}

void session::append_impl(boost::json::object fields, boost::asio::any_completion_handler<append_signature> h)
{
    core_->append_impl(std::move(fields), std::move(h));
}

void session::navigate_impl(
    std::string id, branch_options opts, boost::asio::any_completion_handler<append_signature> h
)
{
    core_->navigate_impl(std::move(id), std::move(opts), std::move(h));
}

void session::request_view_impl(
    compaction::request_budget budget, boost::asio::any_completion_handler<request_view_signature> h
)
{
    core_->request_view_impl(std::move(budget), std::move(h));
}

void session::append_diag_impl(
    boost::json::object fields,
    compaction::diagnostics* diag,
    boost::asio::any_completion_handler<append_signature> h
)
{
    diag->clear();
    core_->append_impl(std::move(fields), std::move(h), diag);
}

void session::append_messages_impl(
    std::vector<boost::json::object> messages, boost::asio::any_completion_handler<append_batch_signature> h
)
{
    detail::append_messages(core_, std::move(messages), std::move(h));
}

void session::replace_history_impl(
    std::vector<boost::json::object> messages,
    boost::asio::any_completion_handler<replace_history_signature> h
)
{
    detail::replace_history(core_, std::move(messages), std::move(h));
}

void session::refresh_impl(boost::asio::any_completion_handler<void_signature> h)
{
    core_->refresh_impl(std::move(h));
}

void session::original_impl(std::string entry_id, boost::asio::any_completion_handler<original_signature> h)
{
    core_->original_impl(std::move(entry_id), std::move(h));
}

void session::between_turns_impl(boost::asio::any_completion_handler<outcome_signature> h)
{
    core_->between_turns_impl(std::move(h));
}

void session::check_impl(
    compaction::message m, bool skip_aborted, boost::asio::any_completion_handler<outcome_signature> h
)
{
    core_->check_impl(std::move(m), skip_aborted, std::move(h));
}

void session::turn_end_impl(boost::asio::any_completion_handler<outcome_signature> h)
{
    core_->last_assistant_check_impl(true, std::move(h));
}

void session::before_prompt_impl(boost::asio::any_completion_handler<outcome_signature> h)
{
    core_->before_prompt_impl(std::move(h));
}

void session::recover_overflow_impl(
    std::string error, boost::asio::any_completion_handler<outcome_signature> h
)
{
    core_->recover_overflow_impl(std::move(error), std::move(h));
}

void session::compact_impl(
    std::optional<std::string> instr, boost::asio::any_completion_handler<outcome_signature> h
)
{
    core_->compact_impl(std::move(instr), std::move(h));
}

void session::adopt_compaction_impl(
    boost::json::object item,
    std::string first_kept,
    std::optional<std::string> covered_leaf,
    boost::asio::any_completion_handler<outcome_signature> h
)
{
    core_->adopt_compaction_impl(
        std::move(item), std::move(first_kept), std::move(covered_leaf), std::move(h)
    );
}

void session::branch_impl(std::string id, boost::asio::any_completion_handler<void_signature> h)
{
    core_->branch_impl(std::move(id), std::move(h));
}

void session::export_checkpoint_impl(boost::asio::any_completion_handler<checkpoint_signature> h)
{
    core_->export_checkpoint_impl(std::move(h));
}

void session::restore_checkpoint_impl(
    boost::json::value record, boost::asio::any_completion_handler<checkpoint_signature> h
)
{
    core_->restore_checkpoint_impl(std::move(record), std::move(h));
}

void session::checkpoint_status_impl(boost::asio::any_completion_handler<checkpoint_status_signature> h)
{
    core_->checkpoint_status_impl(std::move(h));
}

}  // namespace agentctx::runtime
