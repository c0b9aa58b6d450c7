#include "sys/metrics_endpoint.hpp"

#include <algorithm>
#include <cstring>

#include "sys/http_api.hpp"
#include "sys/module.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

namespace {

Result<const GpubindHttpApi*> api() {
  static constexpr ModuleSpec kSpec{"gpubind-http.so", "gpubind_http_api_v1", "--listen", "the HTTP server", "HTTP",
                                    "--textfile works without it; the Debian package gpubind-exporter installs it"};
  return module_api<GpubindHttpApi>(kSpec, [](const GpubindHttpApi& a) { return a.abi == 1 && a.start && a.stop; });
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& host, unsigned port) {
  auto a = api();
  if (!a) return a.error();
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  char err[512] = "";
  e->m_server = (*a)->start(host.c_str(), int(port), &MetricsEndpoint::answer, e.get(), err, sizeof err);
  if (!e->m_server) return Error{"--listen " + host + ":" + std::to_string(port), err[0] ? err : "cannot listen"};
  e->m_stop = (*a)->stop;
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (m_server && m_stop) m_stop(m_server);
}

void MetricsEndpoint::publish(std::string metrics) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_metrics = std::move(metrics);
}

long MetricsEndpoint::answer(void* self, const char* path, char* buf, long cap) {
  auto* e = static_cast<MetricsEndpoint*>(self);
  std::string text;
  if (std::strcmp(path, "/metrics") == 0) {
    std::lock_guard<std::mutex> lock(e->m_mutex);
    text = e->m_metrics;
  } else if (std::strcmp(path, "/healthz") == 0) {
    text = "ok\n";
  } else {
    return -1;
  }
  std::memcpy(buf, text.data(), std::min<size_t>(text.size(), size_t(std::max<long>(cap, 0))));
  return long(text.size());
}

Result<std::pair<std::string, unsigned>> parse_listen_address(const std::string& text) {
  std::string host = "127.0.0.1", port_text = text;
  if (size_t colon = text.rfind(':'); colon != std::string::npos) {
    if (colon > 0) host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [::1]
  auto port = parse_uint(port_text);
  if (!port || *port == 0 || *port > 65535) return Error{"--listen " + text, "expected [ADDR:]PORT with a port from 1 to 65535", ErrorKind::usage};
  return std::pair{host, unsigned(*port)};
}

}  // namespace gpubind::sys
