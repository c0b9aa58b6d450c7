// The exporter's request parsing and answers (sys/http_request.hpp): what a client sends is
// judged here, under the limits, before the server holds anything more of it.
#include "sys/http_request.hpp"

#include <gtest/gtest.h>

namespace gpubind::sys::http {

namespace {

std::optional<std::string> metrics_only(std::string_view path) {
  if (path == "/metrics") return std::string("up 1\n");
  return std::nullopt;
}

std::string header_lines(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "X-" + std::to_string(i) + ": v\r\n";
  return s;
}

}  // namespace

TEST(HttpHead, AWholeGetIsCompleteAndKeptAliveUnderHttp11) {
  Head h = parse_head("GET /metrics?debug=1 HTTP/1.1\r\nHost: node1:9400\r\nAccept: */*\r\n\r\nGET /next");
  ASSERT_EQ(h.state, HeadState::complete);
  EXPECT_EQ(h.request.path, "/metrics");
  EXPECT_TRUE(h.request.keep_alive);
  EXPECT_FALSE(h.request.head_only);
  EXPECT_EQ(h.consumed, std::string_view("GET /metrics?debug=1 HTTP/1.1\r\nHost: node1:9400\r\nAccept: */*\r\n\r\n").size());
}

TEST(HttpHead, BareLineFeedsEndLinesToo) {
  Head h = parse_head("GET /healthz HTTP/1.0\nConnection: keep-alive\n\n");
  ASSERT_EQ(h.state, HeadState::complete);
  EXPECT_TRUE(h.request.keep_alive);
}

TEST(HttpHead, ConnectionCloseAndHttp10EndTheConnection) {
  EXPECT_FALSE(parse_head("GET /metrics HTTP/1.1\r\nconnection: Close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse_head("GET /metrics HTTP/1.0\r\n\r\n").request.keep_alive);
}

TEST(HttpHead, AHalfSentHeadIsIncompleteUntilItsEmptyLine) {
  EXPECT_EQ(parse_head("GET /met").state, HeadState::incomplete);
  EXPECT_EQ(parse_head("GET /metrics HTTP/1.1\r\nHost: x\r\n").state, HeadState::incomplete);
}

TEST(HttpHead, AHeadOverTheByteLimitIs431EvenBeforeItsEnd) {
  Limits limits;
  std::string line = "GET /" + std::string(limits.max_head_bytes, 'a');
  Head h = parse_head(line, limits);
  EXPECT_EQ(h.state, HeadState::bad);
  EXPECT_EQ(h.status, 431);
  std::string many = "GET /metrics HTTP/1.1\r\n" + std::string(limits.max_head_bytes, 'x') + ": y\r\n\r\n";
  EXPECT_EQ(parse_head(many, limits).status, 431);
}

TEST(HttpHead, MoreHeaderLinesThanTheLimitIs431) {
  Limits limits;
  std::string ok = "GET /metrics HTTP/1.1\r\n" + header_lines(limits.max_header_lines) + "\r\n";
  EXPECT_EQ(parse_head(ok, limits).state, HeadState::complete);
  std::string over = "GET /metrics HTTP/1.1\r\n" + header_lines(limits.max_header_lines + 1);
  Head h = parse_head(over, limits);  // refused before the head is even complete
  EXPECT_EQ(h.state, HeadState::bad);
  EXPECT_EQ(h.status, 431);
}

TEST(HttpHead, OnlyGetAndHeadAreServed) {
  Head post = parse_head("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.status, 405);
  Head head = parse_head("HEAD /metrics HTTP/1.1\r\n\r\n");
  ASSERT_EQ(head.state, HeadState::complete);
  Response r = respond(head, metrics_only);
  EXPECT_NE(r.bytes.find("Content-Length: 5\r\n"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.bytes.substr(r.bytes.size() - 4), "\r\n\r\n") << "HEAD has no body";
}

TEST(HttpHead, MalformedRequestLinesAre400And505) {
  EXPECT_EQ(parse_head("GET\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET metrics HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET /a b HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("G(T /metrics HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET /metrics HTTP/2.0\r\n\r\n").status, 505);
  EXPECT_EQ(parse_head("GET /metrics SPDY\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET /\x1b[2J HTTP/1.1\r\n\r\n").status, 400);
}

TEST(HttpHead, MalformedHeadersAre400) {
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nno colon here\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n").status, 400);
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").status, 400);
}

TEST(HttpHead, ARequestWithABodyIsAnsweredAndTheConnectionClosed) {
  Head h = parse_head("GET /metrics HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789");
  ASSERT_EQ(h.state, HeadState::complete);
  EXPECT_TRUE(h.request.has_body);
  EXPECT_FALSE(h.request.keep_alive);
  EXPECT_TRUE(respond(h, metrics_only).close);
  EXPECT_FALSE(parse_head("GET /metrics HTTP/1.1\r\nContent-Length: 000\r\n\r\n").request.has_body);
  EXPECT_TRUE(parse_head("GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").request.has_body);
}

TEST(HttpRespond, TheBodyOfAKnownPathOr404) {
  Response ok = respond(parse_head("GET /metrics HTTP/1.1\r\n\r\n"), metrics_only);
  EXPECT_EQ(ok.bytes.substr(0, 17), "HTTP/1.1 200 OK\r\n");
  EXPECT_NE(ok.bytes.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos);
  EXPECT_EQ(ok.bytes.substr(ok.bytes.size() - 5), "up 1\n");
  EXPECT_FALSE(ok.close);
  Response missing = respond(parse_head("GET /other HTTP/1.1\r\n\r\n"), metrics_only);
  EXPECT_EQ(missing.bytes.substr(0, 24), "HTTP/1.1 404 Not Found\r\n");
}

TEST(HttpRespond, AnErrorAnswerClosesAndSaysWhy) {
  Response r = respond(parse_head("GET /metrics HTTP/1.1\r\n" + header_lines(100)), metrics_only);
  EXPECT_TRUE(r.close);
  EXPECT_EQ(r.bytes.substr(0, 46), "HTTP/1.1 431 Request Header Fields Too Large\r\n");
  EXPECT_NE(r.bytes.find("more than 64 header lines"), std::string::npos) << r.bytes;
  EXPECT_NE(error_response(408, "late").bytes.find("Connection: close"), std::string::npos);
}

}  // namespace gpubind::sys::http
