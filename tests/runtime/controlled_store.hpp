// A memory store whose writes a test controls: held until released, or refused with io_error.
#pragma once

#include <agentctx/runtime/error.hpp>
#include <agentctx/runtime/memory_store.hpp>
#include <agentctx/runtime/store.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace agentctx::test {

/// What the test decides; shared with the store the session owns.
struct store_control
{
    bool hold = false;  ///< writes wait in `held` until release()
    bool fail = false;  ///< writes are refused (io_error) and write nothing
    std::vector<std::function<void()>> held;
    std::size_t writes = 0;  ///< writes the session started (held and refused ones included)

    /// Lets the held writes go on, in order; later writes are no longer held.
    void release()
    {
        hold = false;
        auto go = std::move(held);
        held.clear();
        for (auto& f : go)
            f();
    }
};

class controlled_store final : public runtime::store
{
public:
    controlled_store(std::string jsonl, std::shared_ptr<store_control> c)
        : inner_(std::move(jsonl)), c_(std::move(c))
    {}

    /// The session's JSONL as stored.
    const std::string& text() const noexcept { return inner_.text(); }

    runtime::result<void> write_header(const compaction::session_header& h, runtime::diagnostics& d) override
    {
        return inner_.write_header(h, d);
    }
    runtime::result<void> append(const compaction::entry& e, runtime::diagnostics& d) override
    {
        if (c_->fail)
            return refuse(d);
        return inner_.append(e, d);
    }
    runtime::result<void> append_all(const std::vector<compaction::entry_ptr>& es, runtime::diagnostics& d)
        override
    {
        if (c_->fail)
            return refuse(d);
        return inner_.append_all(es, d);
    }
    runtime::result<compaction::session_log> load(
        const compaction::load_options& o, compaction::load_report& r, runtime::diagnostics& d
    ) override
    {
        return inner_.load(o, r, d);
    }

    void async_write(
        boost::asio::any_io_executor ex,
        compaction::entry_ptr e,
        std::size_t known,
        boost::asio::any_completion_handler<runtime::store_write_signature> h
    ) override
    {
        ++c_->writes;
        auto go =
            std::make_shared<boost::asio::any_completion_handler<runtime::store_write_signature>>(std::move(h)
            );
        later([this, ex, e, known, go] { runtime::store::async_write(ex, e, known, std::move(*go)); });
    }
    void async_write_batch(
        boost::asio::any_io_executor ex,
        std::vector<compaction::entry_ptr> es,
        std::size_t known,
        boost::asio::any_completion_handler<runtime::store_write_signature> h
    ) override
    {
        ++c_->writes;
        auto go =
            std::make_shared<boost::asio::any_completion_handler<runtime::store_write_signature>>(std::move(h)
            );
        later([this, ex, es, known, go] { runtime::store::async_write_batch(ex, es, known, std::move(*go)); }
        );
    }

private:
    static runtime::result<void> refuse(runtime::diagnostics& d)
    {
        d.message = "the test's store refuses writes";
        return runtime::make_error_code(runtime::errc::io_error);
    }
    void later(std::function<void()> f)
    {
        if (c_->hold)
            c_->held.push_back(std::move(f));
        else
            f();
    }

    runtime::memory_store inner_;
    std::shared_ptr<store_control> c_;
};

}  // namespace agentctx::test
