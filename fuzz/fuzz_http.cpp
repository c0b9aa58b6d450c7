// The exporter's request handling (sys/http_request.hpp), driven as the server drives it: the
// bytes arrive in pieces, each piece is parsed with what came before, and whole requests are
// answered one after another on a kept-alive connection. Properties: nothing past the head limit
// is ever waited for, a head never takes more than it was given or than the limit, and every
// answer is one well-formed HTTP/1.1 response whose Content-Length is its body's length.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.hpp"
#include "sys/http_request.hpp"

namespace {

using namespace gpubind::sys::http;

void check_response(const Response& r, bool head_only) {
  size_t end = r.bytes.find("\r\n\r\n");
  gpubind::fuzz::require(r.bytes.rfind("HTTP/1.1 ", 0) == 0 && end != std::string::npos, "not an HTTP/1.1 response");
  std::string_view headers(r.bytes.data(), end);
  size_t cl = headers.find("\r\nContent-Length: ");
  gpubind::fuzz::require(cl != std::string_view::npos, "no Content-Length");
  size_t length = std::stoul(std::string(headers.substr(cl + 18, headers.find("\r\n", cl + 2) - cl - 18)));
  size_t body = r.bytes.size() - end - 4;
  gpubind::fuzz::require(head_only ? body == 0 : body == length, "Content-Length differs from the body");
  gpubind::fuzz::require(headers.find('\n') == headers.find("\r\n") + 1, "a bare LF in the response head");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Limits limits;
  size_t piece = 1 + data[0] % 64;  // how many bytes each read brings
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string buffered;
  auto body_of = [](std::string_view path) -> std::optional<std::string> {
    if (path == "/metrics") return std::string("gpubind_watch_intervals_total 1\n");
    return std::nullopt;
  };
  for (size_t at = 0; at < input.size();) {
    // The server stops reading one byte past the limit: the head is judged on what it holds.
    size_t room = limits.max_head_bytes + 1 > buffered.size() ? limits.max_head_bytes + 1 - buffered.size() : 0;
    size_t n = std::min({piece, input.size() - at, room});
    buffered.append(input.substr(at, n));
    at += n;
    for (;;) {
      Head head = parse_head(buffered, limits);
      if (head.state == HeadState::incomplete) {
        gpubind::fuzz::require(buffered.size() <= limits.max_head_bytes, "waiting for more past the head limit");
        break;
      }
      if (head.state == HeadState::bad) {
        gpubind::fuzz::require(head.status >= 400 && head.status < 600, "a bad head without an error status");
        Response r = respond(head, body_of);
        gpubind::fuzz::require(r.close, "an error answer keeps the connection");
        check_response(r, false);
        return 0;
      }
      gpubind::fuzz::require(head.consumed > 0 && head.consumed <= buffered.size() && head.consumed <= limits.max_head_bytes,
                             "a head took more than it was given or than the limit");
      Response r = respond(head, body_of);
      check_response(r, head.request.head_only);
      if (r.close) return 0;
      buffered.erase(0, head.consumed);
    }
    if (room == 0) return 0;
  }
  return 0;
}
