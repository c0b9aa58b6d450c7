#include "sys/http_request.hpp"

#include <algorithm>
#include <cctype>

namespace gpubind::sys::http {

namespace {

// The end of the first line of `text` (its LF), or npos; `line` is it without CR/LF.
size_t next_line(std::string_view text, size_t from, std::string_view& line) {
  size_t lf = text.find('\n', from);
  if (lf == std::string_view::npos) return lf;
  line = text.substr(from, lf - from);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return lf;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A token in a comma-separated header value (Connection: keep-alive, Upgrade), any case.
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

Head bad(int status, std::string reason) {
  Head h;
  h.state = HeadState::bad;
  h.status = status;
  h.reason = std::move(reason);
  return h;
}

// "GET /metrics?x HTTP/1.1" into `request`; a bad head otherwise.
std::optional<Head> parse_request_line(std::string_view line, Request& request, bool& http11) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return bad(400, "the request line is not METHOD TARGET VERSION");
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1), version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), is_token_char)) return bad(400, "the method is not a token");
  if (target.empty() || target.front() != '/') return bad(400, "the target is not a path");
  if (std::any_of(target.begin(), target.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }))
    return bad(400, "the target holds a control character");
  if (version == "HTTP/1.1") {
    http11 = true;
  } else if (version == "HTTP/1.0") {
    http11 = false;
  } else {
    return version.substr(0, 5) == "HTTP/" ? bad(505, "only HTTP/1.0 and HTTP/1.1 are served") : bad(400, "the version is not HTTP/1.x");
  }
  request.method = std::string(method);
  request.path = std::string(target.substr(0, target.find('?')));
  return std::nullopt;
}

}  // namespace

Head parse_head(std::string_view buffered, const Limits& limits) {
  Head head;
  bool http11 = true, saw_request_line = false;
  std::optional<bool> connection_keep_alive;  // from a Connection header
  size_t pos = 0, header_lines = 0;
  for (;;) {
    std::string_view line;
    size_t lf = next_line(buffered, pos, line);
    if (lf == std::string_view::npos) {
      // No complete line: only the limits can end it now (the head is counted as it grows, so a
      // client cannot make the server hold more than the limit).
      if (buffered.size() > limits.max_head_bytes) return bad(431, "the request head is larger than " + std::to_string(limits.max_head_bytes) + " bytes");
      return head;
    }
    if (lf + 1 > limits.max_head_bytes) return bad(431, "the request head is larger than " + std::to_string(limits.max_head_bytes) + " bytes");
    pos = lf + 1;
    if (!saw_request_line) {
      if (line.empty()) continue;  // RFC 9112 2.2: an empty line before the request line is ignored
      if (auto b = parse_request_line(line, head.request, http11)) return *b;
      saw_request_line = true;
      continue;
    }
    if (line.empty()) break;  // the end of the head
    if (++header_lines > limits.max_header_lines) return bad(431, "the request has more than " + std::to_string(limits.max_header_lines) + " header lines");
    if (line.front() == ' ' || line.front() == '\t') return bad(400, "a folded header line");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad(400, "a header line without a name");
    std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (!std::all_of(name.begin(), name.end(), is_token_char)) return bad(400, "a header name is not a token");
    if (iequals(name, "Connection")) {
      if (has_token(value, "close")) connection_keep_alive = false;
      else if (has_token(value, "keep-alive")) connection_keep_alive = true;
    } else if (iequals(name, "Transfer-Encoding")) {
      head.request.has_body = true;
    } else if (iequals(name, "Content-Length")) {
      if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad(400, "Content-Length is not a number");
      if (value.find_first_not_of('0') != std::string_view::npos) head.request.has_body = true;
    }
  }
  Request& r = head.request;
  if (r.method != "GET" && r.method != "HEAD") return bad(405, "only GET and HEAD are served");
  r.head_only = r.method == "HEAD";
  r.keep_alive = connection_keep_alive.value_or(http11) && !r.has_body;
  head.state = HeadState::complete;
  head.consumed = pos;
  return head;
}

namespace {

std::string_view status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

Response make(int status, std::string_view content_type, std::string_view body, bool head_only, bool close) {
  Response r;
  r.close = close;
  r.bytes.reserve(160 + (head_only ? 0 : body.size()));
  r.bytes += "HTTP/1.1 " + std::to_string(status) + " " + std::string(status_text(status)) + "\r\n";
  r.bytes += "Content-Type: " + std::string(content_type) + "\r\n";
  r.bytes += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (status == 405) r.bytes += "Allow: GET, HEAD\r\n";
  r.bytes += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
  if (!head_only) r.bytes += body;
  return r;
}

}  // namespace

Response error_response(int status, std::string_view reason) {
  return make(status, "text/plain; charset=utf-8", std::string(reason) + "\n", false, true);
}

Response respond(const Head& head, const BodyOf& body_of) {
  if (head.state != HeadState::complete) return error_response(head.status ? head.status : 400, head.reason.empty() ? "bad request" : head.reason);
  const Request& r = head.request;
  std::optional<std::string> body = body_of(r.path);
  if (!body) return make(404, "text/plain; charset=utf-8", "not found: try /metrics or /healthz\n", r.head_only, !r.keep_alive);
  return make(200, "text/plain; version=0.0.4; charset=utf-8", *body, r.head_only, !r.keep_alive);
}

}  // namespace gpubind::sys::http
