// The agent server's facade: starting, stopping, and what it reports about itself.
#include "server.hpp"

#include "listener.hpp"
#include "server_state.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <filesystem>

namespace agentctx::server {

namespace asio = boost::asio;
using asio::ip::tcp;

struct agent_server::impl
{
    std::shared_ptr<server_state> state;
};

agent_server::agent_server(asio::io_context& ioc, server_options opts)
    : impl_(std::make_shared<impl>(impl{server_state::make(ioc, std::move(opts))}))
{}

agent_server::~agent_server()
{
    stop();
}

std::uint16_t agent_server::start()
{
    auto& s = *impl_->state;
    std::filesystem::create_directories(s.opts.data_dir);
    const tcp::endpoint ep(asio::ip::make_address(s.opts.address), s.opts.port);
    s.acceptor.open(ep.protocol());
    s.acceptor.set_option(asio::socket_base::reuse_address(true));
    s.acceptor.bind(ep);
    s.acceptor.listen();
    asio::co_spawn(s.ioc, accept_loop(impl_->state), asio::detached);
    return s.acceptor.local_endpoint().port();
}

std::uint64_t agent_server::accept_failures() const noexcept
{
    return impl_->state->accept_failures.load();
}

std::size_t agent_server::open_connections() const noexcept
{
    return impl_->state->connections.load();
}

void agent_server::stop()
{
    auto& s = *impl_->state;
    if (s.stopped.exchange(true))
        return;
    boost::system::error_code ignore;
    s.acceptor.close(ignore);
    s.sessions->close_all();
}

}  // namespace agentctx::server
