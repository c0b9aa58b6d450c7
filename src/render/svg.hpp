#pragma once
// A small SVG writer: the drawings gpubind makes (bench's box plot, the node with its ranks) are
// rectangles, lines, circles and text, written as text with every string escaped. Pure.
#include <string>

namespace gpubind::render {

class Svg {
 public:
  // A document of this size (pixels) on a white background, sans-serif 12 px by default.
  Svg(int width, int height);
  // Attributes are given as written ("fill=\"#eee\" stroke=\"black\""); text is escaped here.
  void rect(double x, double y, double w, double h, const std::string& attrs);
  void line(double x1, double y1, double x2, double y2, const std::string& attrs);
  void circle(double cx, double cy, double r, const std::string& attrs);
  void text(double x, double y, const std::string& text, const std::string& attrs = "");
  // A group whose tooltip (<title>) is `title`; close it with end_group().
  void begin_group(const std::string& title);
  void end_group();
  // The whole document, ending in a newline.
  std::string str() const;

 private:
  int m_width, m_height;
  std::string m_body;
};

// A coordinate as written: one decimal.
std::string svg_number(double v);

}  // namespace gpubind::render
