#include "discover/xml.hpp"

#include <gtest/gtest.h>

namespace gpubind::discover {

TEST(Xml, ElementsAttributesAndNesting) {
  auto r = parse_xml(R"(<?xml version="1.0"?>
<!-- a comment -->
<!DOCTYPE system>
<system version="1">
  <cpu numaid='0' affinity="0000ffff">text is ignored
    <pci busid="0000:01:00.0"/>
    <!-- inner comment -->
  </cpu>
</system>
)");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "system");
  ASSERT_EQ(r->children.size(), 1u);
  const XmlElement& cpu = r->children[0];
  EXPECT_EQ(*cpu.attr("numaid"), "0");
  EXPECT_EQ(*cpu.attr("affinity"), "0000ffff");
  EXPECT_EQ(cpu.attr("missing"), nullptr);
  ASSERT_EQ(cpu.children.size(), 1u);
  EXPECT_EQ(*cpu.children[0].attr("busid"), "0000:01:00.0");
  EXPECT_EQ(cpu.children[0].line, 6u);
}

TEST(Xml, Entities) {
  auto r = parse_xml(R"(<a v="x &amp; y &lt;z&gt; &quot;q&quot; &#65;&#x42;"/>)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->attr("v"), "x & y <z> \"q\" AB");
}

TEST(Xml, MalformedInputsSayWhatAndWhere) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c : {Case{"", "no root element"}, Case{"<a>", "not closed"}, Case{"<a></b>", "closes"},
                        Case{"<a x=1/>", "not quoted"}, Case{"<a x/>", "no value"}, Case{"<a x=\"1\" x=\"2\"/>", "twice"},
                        Case{"<a/><b/>", "after the root"}, Case{"<a v=\"&bogus;\"/>", "unknown entity"},
                        Case{"<a\n<!-- x", "expected"}, Case{"<!-- never closed", "unterminated comment"},
                        Case{"hello <a/>", "text before"}, Case{"<a x=\"1\"y=\"2\"/>", "space"}}) {
    auto r = parse_xml(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(c.why), std::string::npos) << c.text << " -> " << r.error().message();
    EXPECT_EQ(r.error().what.rfind("line ", 0), 0u);
  }
}

TEST(Xml, DeepNestingIsRefusedNotACrash) {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "<a>";
  auto r = parse_xml(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("too deeply"), std::string::npos);
}

}  // namespace gpubind::discover
