#pragma once
// The exporter's HTTP/1.1, pure: a request head read from bytes a client sent, under limits, and
// the response to it. The server (modules/http_module.cpp) only moves bytes and enforces deadlines; every
// decision about what a client sent is made here, where the fuzzer and the unit tests reach it.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gpubind::sys::http {

// What one request may take. A head is the request line and its headers, up to the empty line.
struct Limits {
  size_t max_head_bytes = 8192;   // larger: 431, connection closed
  size_t max_header_lines = 64;   // more: 431, connection closed
};

enum class HeadState {
  incomplete,  // no empty line yet, and within the limits: read more
  complete,    // a request to answer
  bad,         // answer `status` and close
};

struct Request {
  std::string method;
  std::string path;  // the target without its query
  bool head_only = false;   // HEAD
  bool keep_alive = false;  // HTTP/1.1 without "Connection: close", or 1.0 with "keep-alive"
  bool has_body = false;    // Content-Length > 0 or Transfer-Encoding: never read, so the connection closes
};

struct Head {
  HeadState state = HeadState::incomplete;
  Request request;
  size_t consumed = 0;  // bytes of `buffered` the head took (complete only)
  int status = 0;       // bad only: 400, 405, 431 or 505
  std::string reason;   // bad only: why, for the response body
};

// Reads the head at the start of `buffered` (what the connection has received so far). Lines end
// in CRLF or LF. Only GET and HEAD are served (others: 405); HTTP/1.0 and 1.1 (others: 505).
Head parse_head(std::string_view buffered, const Limits& limits = {});

struct Response {
  std::string bytes;  // status line, headers and body, ready to send
  bool close = true;  // close the connection once sent
};

// The body for a path, or nullopt for 404. Called only for complete GET/HEAD requests.
using BodyOf = std::function<std::optional<std::string>(std::string_view path)>;

// The answer to a parsed head: its body from `body_of` (200), 404, or the error `head` carries.
Response respond(const Head& head, const BodyOf& body_of);

// An error answer the server sends on its own: 408 when a request's deadline passed, 503 when the
// connection is turned away. Always closes.
Response error_response(int status, std::string_view reason);

}  // namespace gpubind::sys::http
