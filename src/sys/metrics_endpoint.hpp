#pragma once
// `watch --listen ADDR:PORT`: GET /metrics answers the text last published, GET /healthz "ok".
// The server runs on its own threads in the module gpubind-http.so (sys/http_api.hpp), loaded
// here only when asked for; the caller's thread publishes, and never waits on a client.
#include <memory>
#include <mutex>
#include <string>

#include "util/result.hpp"

namespace gpubind::sys {

class MetricsEndpoint {
 public:
  // Binds host:port now: a port in use or an address that is not this machine's is an Error.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& host, unsigned port);
  ~MetricsEndpoint();  // stops serving
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  // The text /metrics answers from now on.
  void publish(std::string metrics);

 private:
  MetricsEndpoint() = default;
  static long answer(void* self, const char* path, char* buf, long cap);
  std::mutex m_mutex;
  std::string m_metrics;
  void* m_server = nullptr;
  void (*m_stop)(void*) = nullptr;
};

// "ADDR:PORT", ":PORT" or "PORT" (address 127.0.0.1); an Error names what is wrong.
Result<std::pair<std::string, unsigned>> parse_listen_address(const std::string& text);

}  // namespace gpubind::sys
