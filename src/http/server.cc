#include "http/server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "http/session.h"

namespace tern::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr int kListenBacklog = 4096;  // connections waiting for accept(); the kernel caps it at net.core.somaxconn

// Every connection is a file descriptor: take the hard limit, so that max_connections and not the default soft limit
// of 1,024 decides how many clients are held.
void raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace

class Server::Impl final : public SessionHost {
public:
    Impl(ServerOptions options, const Handler& handler)
        : options_(std::move(options)),
          handler_(handler),
          io_(options_.io_threads),
          acceptor_(io_),
          retry_timer_(io_),
          workers_(static_cast<size_t>(options_.worker_threads)),
          work_guard_(asio::make_work_guard(io_)) {}

    Status bind();
    int port() const { return acceptor_.local_endpoint().port(); }
    void serve();
    void stop();
    int num_connections() const {
        std::lock_guard lock(sessions_mutex_);
        return static_cast<int>(sessions_.size());
    }
    int64_t num_connections_closed() const {
        std::lock_guard lock(sessions_mutex_);
        return num_closed_;
    }

    // SessionHost
    const ServerOptions& options() const override { return options_; }
    const Handler& handler() const override { return handler_; }
    void run_on_worker(std::function<void()> work) override { asio::post(workers_, std::move(work)); }
    bool stopping() const override { return stopping_.load(); }
    void session_closed(Session* session) override {
        std::lock_guard lock(sessions_mutex_);
        if (sessions_.erase(session) != 0) ++num_closed_;
    }

private:
    void accept();
    void on_accept(boost::system::error_code error, tcp::socket socket);
    std::vector<std::shared_ptr<Session>> live_sessions() const;
    void wait_for_sessions(std::chrono::seconds timeout) const;

    ServerOptions options_;
    const Handler& handler_;
    std::atomic<bool> stopping_{false};
    // Before io_: sessions still held by its handlers deregister themselves when io_ destroys them.
    mutable std::mutex sessions_mutex_;
    int64_t num_closed_ = 0;  // guarded by sessions_mutex_
    std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;

    asio::io_context io_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_timer_;
    asio::thread_pool workers_;
    asio::executor_work_guard<asio::io_context::executor_type> work_guard_;

    std::mutex lifecycle_mutex_;  // orders serve() against stop()
    std::condition_variable served_;
    bool stop_requested_ = false;
    bool serving_ = false;
};

Status Server::Impl::bind() {
    boost::system::error_code error;
    const auto address = asio::ip::make_address(options_.host == "localhost" ? "127.0.0.1" : options_.host, error);
    if (!error) {
        const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
        acceptor_.open(endpoint.protocol(), error);
        if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
        if (!error) acceptor_.bind(endpoint, error);
        if (!error) acceptor_.listen(kListenBacklog, error);
    }
    if (error) {
        return Status(StatusCode::kUnavailable, fmt::format("cannot listen on {}:{}: {} (in use? choose another --port)",
                                                            options_.host, options_.port, error.message()));
    }
    raise_open_file_limit();
    return Status::ok();
}

void Server::Impl::accept() {
    acceptor_.async_accept(asio::make_strand(io_), [this](boost::system::error_code error, tcp::socket socket) {
        on_accept(error, std::move(socket));
    });
}

void Server::Impl::on_accept(boost::system::error_code error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || stopping_.load()) return;
    if (error) {  // e.g. out of file descriptors: try again shortly rather than spin
        log_warn("accept failed: {}", error.message());
        retry_timer_.expires_after(std::chrono::milliseconds(50));
        retry_timer_.async_wait([this](boost::system::error_code timer_error) {
            if (!timer_error) accept();
        });
        return;
    }
    // A stream is many small writes, one per token. With Nagle's algorithm on, each waits for the ACK of the one
    // before, which the client delays by up to 40 ms: the first token arrived 40 ms late and the rest in a burst.
    boost::system::error_code option_error;
    socket.set_option(tcp::no_delay(true), option_error);  // a failure only costs latency
    auto session = std::make_shared<Session>(std::move(socket), *this);
    bool admitted = false;
    {
        std::lock_guard lock(sessions_mutex_);
        admitted = static_cast<int>(sessions_.size()) < options_.max_connections;
        if (admitted) sessions_.emplace(session.get(), session);
    }
    if (admitted) session->start();  // else over max_connections: the socket closes with the session, now
    accept();
}

void Server::Impl::serve() {
    {
        std::lock_guard lock(lifecycle_mutex_);
        if (stop_requested_) return;
        serving_ = true;
    }
    accept();
    std::vector<std::thread> threads;
    for (int idx = 1; idx < options_.io_threads; ++idx) threads.emplace_back([this] { io_.run(); });
    io_.run();
    for (std::thread& thread : threads) thread.join();
    {
        std::lock_guard lock(lifecycle_mutex_);
        serving_ = false;
    }
    served_.notify_all();
}

std::vector<std::shared_ptr<Session>> Server::Impl::live_sessions() const {
    std::vector<std::shared_ptr<Session>> live;
    std::lock_guard lock(sessions_mutex_);
    for (const auto& [raw, weak] : sessions_) {
        if (auto session = weak.lock()) live.push_back(std::move(session));
    }
    return live;
}

void Server::Impl::wait_for_sessions(std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (num_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

// Stops accepting, lets responses under way finish (idle connections close at once), then stops the I/O threads.
// Jobs left (a client that never read its stream) are dropped here, while the io_context is still whole, so that no
// engine listener can post into it while it is destroyed.
void Server::Impl::stop() {
    {
        std::lock_guard lock(lifecycle_mutex_);
        if (stop_requested_) return;
        stop_requested_ = true;
    }
    stopping_.store(true);
    asio::post(io_, [this] {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        retry_timer_.cancel();
    });
    for (const auto& session : live_sessions()) {
        asio::post(session->executor(), [session] { session->shut_down(); });
    }
    wait_for_sessions(std::chrono::seconds(std::max(1, options_.write_timeout_s)));
    work_guard_.reset();
    io_.stop();
    {
        std::unique_lock lock(lifecycle_mutex_);
        served_.wait(lock, [&] { return !serving_; });
    }
    workers_.join();
    for (const auto& session : live_sessions()) session->drop_job();
}

Server::Server(ServerOptions options, const Handler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Server::~Server() { stop(); }

Status Server::bind() {
    TERN_RETURN_IF_ERROR(impl_->bind());
    port_ = impl_->port();
    return Status::ok();
}

void Server::serve() { impl_->serve(); }
void Server::stop() { impl_->stop(); }
int Server::num_connections() const { return impl_->num_connections(); }
int64_t Server::num_connections_closed() const { return impl_->num_connections_closed(); }

}  // namespace tern::http
