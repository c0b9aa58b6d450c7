#include "render/svg.hpp"

#include <cmath>
#include <cstdio>

#include "util/strings.hpp"

namespace gpubind::render {

std::string svg_number(double v) {
  // What snprintf's "%.1f" writes. A drawing's coordinates are mostly multiples of a quarter
  // (sums of whole and half sizes), written with integers here, ties to even as printf rounds;
  // anything else through snprintf, which is slow for the tens of thousands of coordinates of a
  // large node's drawing. (std::to_chars for double would link libm into the binary.)
  double quarters = v * 4;  // exact: a power of two
  if (quarters > -1e15 && quarters < 1e15 && double(static_cast<long long>(quarters)) == quarters) {
    long long q = static_cast<long long>(quarters);
    unsigned long long scaled = static_cast<unsigned long long>(q < 0 ? -q : q) * 10;  // tenths, times 4
    unsigned long long tenths = scaled / 4, rest = scaled % 4;
    if (rest > 2 || (rest == 2 && tenths % 2 == 1)) ++tenths;
    return (std::signbit(v) ? "-" : "") + std::to_string(tenths / 10) + "." + char('0' + tenths % 10);
  }
  char b[320];  // the largest double is 309 digits
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

Svg::Svg(int width, int height) : m_width(width), m_height(height) {}

void Svg::rect(double x, double y, double w, double h, const std::string& attrs) {
  m_body += "<rect x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\" width=\"" + svg_number(w) + "\" height=\"" +
            svg_number(h) + "\" " + attrs + "/>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  m_body += "<line x1=\"" + svg_number(x1) + "\" y1=\"" + svg_number(y1) + "\" x2=\"" + svg_number(x2) + "\" y2=\"" +
            svg_number(y2) + "\" " + attrs + "/>\n";
}

void Svg::circle(double cx, double cy, double r, const std::string& attrs) {
  m_body += "<circle cx=\"" + svg_number(cx) + "\" cy=\"" + svg_number(cy) + "\" r=\"" + svg_number(r) + "\" " + attrs + "/>\n";
}

void Svg::text(double x, double y, const std::string& text, const std::string& attrs) {
  m_body += "<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" +
            xml_escape(text) + "</text>\n";
}

void Svg::begin_group(const std::string& title) { m_body += "<g>\n<title>" + xml_escape(title) + "</title>\n"; }

void Svg::end_group() { m_body += "</g>\n"; }

std::string Svg::str() const {
  std::string w = std::to_string(m_width), h = std::to_string(m_height);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
         "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\" font-size=\"12\">\n" +
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + m_body + "</svg>\n";
}

}  // namespace gpubind::render
