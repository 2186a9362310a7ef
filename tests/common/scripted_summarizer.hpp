// Test summarizer: replays a script of outcomes (success, failures, hangs, delays) with no network.
#pragma once

#include <agentctx/providers/summarizer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace agentctx::test {

struct script_step
{
    enum kind_t
    {
        succeed,          ///< text with stop reason `stop`
        stop_error,       ///< stop reason `error`
        truncated,        ///< stop reason `length`
        aborted,          ///< stop reason `aborted`
        transport_error,  ///< completes with a connection error code
        hang,             ///< never completes unless cancelled
    } kind = succeed;
    std::string text = "## Goal\nKeep the parser fast.\n\n## Next Steps\n1. Benchmark it.";
    std::chrono::milliseconds delay{0};  ///< complete late (cancellable while waiting)
};

class scripted_summarizer final : public providers::summarizer
{
public:
    explicit scripted_summarizer(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}

    void push(script_step s)
    {
        std::lock_guard lock(mu_);
        script_.push_back(std::move(s));
    }
    void set_default(script_step s)
    {
        std::lock_guard lock(mu_);
        default_ = std::move(s);
    }

    std::string name() const override { return "scripted"; }

    std::size_t calls() const
    {
        std::lock_guard lock(mu_);
        return prompts_.size();
    }
    std::vector<compaction::summary_prompt> prompts() const
    {
        std::lock_guard lock(mu_);
        return prompts_;
    }
    int cancellations() const
    {
        std::lock_guard lock(mu_);
        return cancelled_;
    }

protected:
    void summarize_impl(
        compaction::summary_prompt prompt,
        boost::asio::any_completion_handler<providers::summarize_signature> handler
    ) override
    {
        script_step step;
        {
            std::lock_guard lock(mu_);
            prompts_.push_back(prompt);
            if (!script_.empty())
            {
                step = std::move(script_.front());
                script_.pop_front();
            }
            else
                step = default_;
        }
        compaction::summary_output out{step.text, compaction::stop_reason::stop, std::nullopt};
        boost::system::error_code ec;
        switch (step.kind)
        {
        case script_step::succeed:
            break;
        case script_step::stop_error:
            out.stop = compaction::stop_reason::error;
            out.error_message = "HTTP 500";
            break;
        case script_step::truncated:
            out.stop = compaction::stop_reason::length;
            break;
        case script_step::aborted:
            out.stop = compaction::stop_reason::aborted;
            break;
        case script_step::transport_error:
            ec = boost::asio::error::connection_reset;
            break;
        case script_step::hang:
            break;
        }
        if (step.kind != script_step::hang && step.delay.count() == 0)
        {
            boost::asio::post(ex_, boost::asio::append(std::move(handler), ec, std::move(out)));
            return;
        }
        // Wait on a timer on a strand of its own; cancellation cancels it through that strand, so
        // the summarizer is safe when the io_context runs on several threads.
        auto strand = boost::asio::make_strand(ex_);
        auto timer = std::make_shared<boost::asio::steady_timer>(strand);
        timer->expires_after(step.kind == script_step::hang ? std::chrono::hours(24) : step.delay);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected())
            slot.assign([timer, strand](boost::asio::cancellation_type) {
                boost::asio::post(strand, [timer] { timer->cancel(); });
            });
        timer->async_wait([this, timer, handler = std::move(handler), ec, out = std::move(out)](
                              boost::system::error_code wec
                          ) mutable {
            boost::asio::get_associated_cancellation_slot(handler).clear();
            if (wec == boost::asio::error::operation_aborted)
            {
                {
                    std::lock_guard lock(mu_);
                    ++cancelled_;
                }
                std::move(handler)(boost::asio::error::operation_aborted, compaction::summary_output{});
                return;
            }
            std::move(handler)(ec, std::move(out));
        });
    }

private:
    boost::asio::any_io_executor ex_;
    mutable std::mutex mu_;
    std::deque<script_step> script_;
    script_step default_;
    std::vector<compaction::summary_prompt> prompts_;
    int cancelled_ = 0;
};

}  // namespace agentctx::test
