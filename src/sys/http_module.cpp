// gpubind-http.so: `watch --listen`'s HTTP server, on cpp-httplib (Debian's libcpp-httplib).
#include <httplib.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "sys/http_api.hpp"
#include "sys/module_side.hpp"

namespace {

struct Server {
  httplib::Server http;
  std::thread thread;
};

using gpubind::module_side::copy_error;

void* start(const char* host, int port, GpubindHttpBody body, void* user, char* err, long errcap) {
  try {
    auto s = std::make_unique<Server>();
    // A slow or stalled client holds one of the server's threads for at most these, never the
    // sampler (which runs on the caller's thread); requests are a line and a few headers.
    s->http.set_read_timeout(2, 0);
    s->http.set_write_timeout(5, 0);
    s->http.set_keep_alive_timeout(2);
    // 16 threads: a scrape is answered while a few clients hold connections open.
    s->http.new_task_queue = [] { return new httplib::ThreadPool(16); };
    s->http.set_keep_alive_max_count(100);
    s->http.set_payload_max_length(64 * 1024);
    // SO_REUSEADDR only: cpp-httplib's default, SO_REUSEPORT, would let a second watch bind the
    // same port and the kernel split the scrapes between them. A port in use must be an error.
    s->http.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    s->http.Get(".*", [body, user](const httplib::Request& req, httplib::Response& res) {
      std::string buf(256 * 1024, '\0');
      long n = body(user, req.path.c_str(), buf.data(), long(buf.size()));
      if (n > long(buf.size())) {
        buf.resize(size_t(n));
        n = body(user, req.path.c_str(), buf.data(), long(buf.size()));
      }
      if (n < 0) {
        res.status = 404;
        res.set_content("not found: try /metrics or /healthz\n", "text/plain");
        return;
      }
      buf.resize(size_t(std::min<long>(n, long(buf.size()))));
      res.set_content(buf, "text/plain; version=0.0.4; charset=utf-8");
    });
    if (!s->http.bind_to_port(host, port)) {
      copy_error(err, errcap, std::string("cannot listen on ") + host + ":" + std::to_string(port) + " (" + std::strerror(errno) + ")");
      return nullptr;
    }
    Server* raw = s.get();
    s->thread = std::thread([raw] { raw->http.listen_after_bind(); });
    return s.release();
  } catch (const std::exception& e) {
    copy_error(err, errcap, e.what());
    return nullptr;
  }
}

void stop(void* server) {
  auto* s = static_cast<Server*>(server);
  if (!s) return;
  s->http.stop();
  if (s->thread.joinable()) s->thread.join();
  delete s;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const GpubindHttpApi* gpubind_http_api_v1() {
  static const GpubindHttpApi api{1, &start, &stop};
  return &api;
}
