#include "util/html/html.h"

#include "gtest/gtest.h"

namespace ledger::html {
namespace {

TEST(HtmlEscape, EscapesTheFiveCharactersAndKeepsEveryOtherByte) {
  EXPECT_EQ(HtmlEscape(R"(<a href="x" title='y'>&</a>)"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  EXPECT_EQ(HtmlEscape("caf\xc3\xa9 \t\n"), "caf\xc3\xa9 \t\n");
  EXPECT_EQ(HtmlEscape(""), "");
}

}  // namespace
}  // namespace ledger::html
