// gpubind-http.so: `watch --listen`'s HTTP server. One thread and epoll: a client costs a socket
// and at most one request head of memory, never a thread, so idle or slow clients cannot keep a
// scrape waiting. What a client sent is judged by the pure http_request.cpp; this file moves
// bytes and enforces the limits that need a clock or a count:
//   - a request's head must arrive whole within kRequestDeadline of the connection opening (or of
//     the previous answer on a kept-alive connection): else 408 and close;
//   - an answer must be taken by the client within kWriteDeadline: else the connection is closed;
//   - at most max_connections at once; one more evicts the connection that has waited longest
//     without completing a request, else the one whose answer has waited longest to be taken
//     (clients that pipeline requests and never read the answers held every slot writing, and
//     every new scrape was reset), so a new scrape always gets a slot;
//   - a connection's kernel send buffer is kSendBuffer: what one client leaves unread is bounded
//     (4,200 such clients held ~830 MB of kernel TCP memory with the kernel's own sizing).
// Not cpp-httplib (Debian 12: 0.11) any more: it gives each connection a thread for as long as
// the client keeps sending, and stores any number of headers.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "modules/module_side.hpp"
#include "sys/http_api.hpp"
#include "sys/http_request.hpp"
#include "sys/unique_fd.hpp"

namespace {

using gpubind::module_side::copy_error;
using Clock = std::chrono::steady_clock;
namespace http = gpubind::sys::http;

constexpr auto kRequestDeadline = std::chrono::seconds(5);
constexpr auto kWriteDeadline = std::chrono::seconds(10);
constexpr int kMaxConnections = 4096;
constexpr int kSendBuffer = 64 * 1024;
constexpr int kTickMs = 200;  // how often deadlines are looked at

struct Connection {
  gpubind::sys::UniqueFd fd;
  std::string in;       // received, not yet answered
  std::string out;      // the answer being sent
  size_t sent = 0;
  bool close_after = false;
  bool writing = false;
  bool peer_closed = false;  // it sent its request and closed its side
  Clock::time_point since;  // when the current request (or answer) began
};

struct Server {
  gpubind::sys::UniqueFd listen_fd;
  gpubind::sys::UniqueFd wake_fd;  // eventfd: stop()
  gpubind::sys::UniqueFd epoll_fd;
  int max_connections = kMaxConnections;
  GpubindHttpBody body = nullptr;
  void* user = nullptr;
  std::unordered_map<int, Connection> connections;
  bool listen_paused = false;
  std::thread thread;
  http::Limits limits;

  void watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd.get(), op, fd, &ev);
  }

  void drop(int fd) {
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, fd, nullptr);
    connections.erase(fd);  // closes it
  }

  // The connection that has waited longest without completing a request (idle kept-alive ones
  // included); else the one whose answer has waited longest to be taken; -1 when there is none.
  int evictable() const {
    int oldest = -1, oldest_writer = -1;
    Clock::time_point when = Clock::time_point::max(), writer_when = Clock::time_point::max();
    for (const auto& [fd, c] : connections) {
      if (!c.writing && c.since < when) oldest = fd, when = c.since;
      if (c.writing && c.since < writer_when) oldest_writer = fd, writer_when = c.since;
    }
    return oldest >= 0 ? oldest : oldest_writer;
  }

  void accept_all() {
    for (;;) {
      gpubind::sys::UniqueFd accepted(::accept4(listen_fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!accepted) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE) && evict_one()) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) pause_listen();  // out of descriptors: try next tick
        return;
      }
      if (int(connections.size()) >= max_connections && !evict_one()) continue;  // closed
      int fd = accepted.get();
      int one = 1, send_buffer = kSendBuffer;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
      Connection& c = connections[fd];
      c.fd = std::move(accepted);
      c.since = Clock::now();
      watch(fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    }
  }

  bool evict_one() {
    int victim = evictable();
    if (victim < 0) return false;
    drop(victim);
    return true;
  }

  void pause_listen() {
    listen_paused = true;
    watch(listen_fd.get(), 0, EPOLL_CTL_MOD);
  }

  std::optional<std::string> body_of(std::string_view path) {
    std::string p(path);
    std::string buf(64 * 1024, '\0');
    long n = body(user, p.c_str(), buf.data(), long(buf.size()));
    if (n > long(buf.size())) {
      buf.resize(size_t(n));
      n = body(user, p.c_str(), buf.data(), long(buf.size()));
    }
    if (n < 0) return std::nullopt;
    buf.resize(size_t(std::min<long>(n, long(buf.size()))));
    return buf;
  }

  void start_answer(Connection& c, http::Response response) {
    c.out = std::move(response.bytes);
    c.sent = 0;
    c.close_after = response.close || c.peer_closed;
    c.writing = true;
    c.since = Clock::now();
    watch(c.fd.get(), EPOLLOUT, EPOLL_CTL_MOD);
  }

  // Answers the request buffered on `c` if its head is whole or bad; otherwise waits for more.
  void serve(Connection& c) {
    http::Head head = http::parse_head(c.in, limits);
    if (head.state == http::HeadState::incomplete) return;
    if (head.state == http::HeadState::complete) c.in.erase(0, head.consumed);
    start_answer(c, http::respond(head, [this](std::string_view path) { return body_of(path); }));
  }

  void on_readable(Connection& c) {
    char buf[4096];
    for (;;) {
      // Never hold more than one head beyond the limit: past it the head is refused anyway.
      if (c.in.size() > limits.max_head_bytes) break;
      ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // The client closed (or reset): a whole request it sent before closing is still answered.
      if (n == 0 && http::parse_head(c.in, limits).state != http::HeadState::incomplete) {
        c.peer_closed = true;
        break;
      }
      drop(c.fd.get());
      return;
    }
    serve(c);
  }

  void on_writable(Connection& c) {
    while (c.sent < c.out.size()) {
      ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += size_t(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      drop(c.fd.get());
      return;
    }
    if (c.close_after) {
      drop(c.fd.get());
      return;
    }
    // Kept alive: the next request's deadline starts now; one already buffered is answered.
    c.out.clear();
    c.out.shrink_to_fit();
    c.writing = false;
    c.since = Clock::now();
    watch(c.fd.get(), EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
    serve(c);
  }

  void enforce_deadlines() {
    Clock::time_point now = Clock::now();
    std::vector<int> expired, late;
    for (auto& [fd, c] : connections) {
      if (c.writing && now - c.since > kWriteDeadline) expired.push_back(fd);
      else if (!c.writing && now - c.since > kRequestDeadline) (c.in.empty() ? expired : late).push_back(fd);
    }
    for (int fd : expired) drop(fd);
    // Part of a request came and not the rest: 408, sent if the socket takes it now, then closed.
    for (int fd : late) {
      http::Response r = http::error_response(408, "the request did not arrive within " + std::to_string(kRequestDeadline.count()) + " s");
      (void)::send(fd, r.bytes.data(), r.bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      drop(fd);
    }
    if (listen_paused) {
      listen_paused = false;
      watch(listen_fd.get(), EPOLLIN, EPOLL_CTL_MOD);
    }
  }

  void run() {
    epoll_event events[256];
    Clock::time_point next_tick = Clock::now();
    for (;;) {
      // The tick serves open connections' deadlines and a paused listener: with neither, sleep until
      // a connection comes (a watch that nobody scrapes wakes only to sample, not five times a second).
      int n = ::epoll_wait(epoll_fd.get(), events, 256, connections.empty() && !listen_paused ? -1 : kTickMs);
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == wake_fd.get()) return;
        if (fd == listen_fd.get()) {
          accept_all();
          continue;
        }
        auto it = connections.find(fd);
        if (it == connections.end()) continue;
        Connection& c = it->second;
        if (c.writing) {
          on_writable(c);
        } else if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
          on_readable(c);
        }
      }
      if (Clock::now() >= next_tick) {
        enforce_deadlines();
        next_tick = Clock::now() + std::chrono::milliseconds(kTickMs);
      }
    }
  }
};

// Enough descriptors for the connections: the soft limit raised toward the hard one, and the
// connection cap kept to half of what is left so watch's own files never run short.
int connection_cap() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 256;
  rlim_t want = 2 * kMaxConnections + 1024;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min(want, lim.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur == RLIM_INFINITY) return kMaxConnections;
  return int(std::clamp<rlim_t>(lim.rlim_cur / 2, 16, kMaxConnections));
}

// A listening socket on host:port, or none with the reason in `why`.
gpubind::sys::UniqueFd listen_on(const char* host, int port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host, service.c_str(), &hints, &found); rc != 0) {
    why = rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
    return {};
  }
  gpubind::sys::UniqueFd fd;
  for (addrinfo* a = found; a && !fd; a = a->ai_next) {
    fd.reset(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      why = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR only: SO_REUSEPORT would let a second watch bind the same port and the kernel
    // split the scrapes between them. A port in use must be an error.
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      why = std::strerror(errno);
      fd.reset();
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

void* start(const char* host, int port, GpubindHttpBody body, void* user, char* err, long errcap) {
  try {
    auto s = std::make_unique<Server>();
    s->body = body;
    s->user = user;
    std::string why;
    s->listen_fd = listen_on(host, port, why);
    if (!s->listen_fd) {
      copy_error(err, errcap, std::string("cannot listen on ") + host + ":" + std::to_string(port) + " (" + why + ")");
      return nullptr;
    }
    s->max_connections = connection_cap();
    s->wake_fd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    s->epoll_fd.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!s->wake_fd || !s->epoll_fd) {
      copy_error(err, errcap, std::string("cannot serve: ") + std::strerror(errno));
      return nullptr;
    }
    s->watch(s->listen_fd.get(), EPOLLIN, EPOLL_CTL_ADD);
    s->watch(s->wake_fd.get(), EPOLLIN, EPOLL_CTL_ADD);
    Server* raw = s.get();
    s->thread = std::thread([raw] { raw->run(); });
    return s.release();
  } catch (const std::exception& e) {
    copy_error(err, errcap, e.what());
    return nullptr;
  }
}

void stop(void* server) {
  auto* s = static_cast<Server*>(server);
  if (!s) return;
  uint64_t one = 1;
  (void)!::write(s->wake_fd.get(), &one, sizeof one);
  if (s->thread.joinable()) s->thread.join();
  delete s;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const GpubindHttpApi* gpubind_http_api_v1() {
  static const GpubindHttpApi api{1, &start, &stop};
  return &api;
}
