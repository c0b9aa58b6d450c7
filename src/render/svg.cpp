#include "render/svg.hpp"

#include <charconv>
#include <cstdio>

#include "util/strings.hpp"

namespace gpubind::render {

std::string svg_number(double v) {
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::fixed, 1);  // printf's "%.1f"
  return std::string(b, r.ptr);
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
