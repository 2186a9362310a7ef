// The compaction run shared by `compact` and `recover`: abort on a signal, redraw while running.
#include "cli_compaction_run.hpp"

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <csignal>
#include <cstdio>
#include <variant>

namespace agentctx::cli {

compaction_run run_compaction(
    boost::asio::io_context& ioc,
    runtime::session& session,
    std::optional<std::string> instructions,
    bool tty,
    bool announce,
    std::chrono::milliseconds period,
    std::function<void()> draw
)
{
    compaction_run run;
    // From here SIGINT and SIGTERM are ours, also where the shell started us ignoring SIGINT.
    boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (ec)
            return;
        run.interrupted = true;
        session.abort_compaction();
    });
    // The announcement comes after the handlers above, so a signal sent once it is read aborts
    // the compaction. The listener outlives this call: it holds no reference to its locals.
    if (announce)
        session.on_event([said = false](const runtime::session_event& e) mutable {
            if (said || !std::holds_alternative<runtime::compaction_start_event>(e))
                return;
            said = true;
            std::fprintf(stderr, "%s\n", started_line);
        });
    boost::asio::steady_timer ticker(ioc);
    bool finished = false;
    std::function<void()> tick = [&] {
        if (!tty || finished)
            return;
        draw();
        ticker.expires_after(period);
        ticker.async_wait([&](boost::system::error_code ec) {
            if (!ec)
                tick();
        });
    };
    tick();
    session.async_compact(
        std::move(instructions),
        [&](boost::system::error_code ec, runtime::compaction_outcome o) {
            run.ec = ec;
            run.outcome = std::move(o);
            signals.cancel();
            finished = true;
            ticker.cancel();
        }
    );
    ioc.run();
    if (tty)
        std::fputs("\r\033[K", stderr);
    return run;
}

}  // namespace agentctx::cli
