// Escaping text for HTML pages (the evidence pack's report, the dashboard).
//
// Thread-safe: a pure function.
#ifndef UTIL_HTML_HTML_H_
#define UTIL_HTML_HTML_H_

#include <string>
#include <string_view>

namespace ledger::html {

// Text for HTML, in content or a quoted attribute: & < > " ' as entities,
// every other byte as it is.
std::string HtmlEscape(std::string_view s);

}  // namespace ledger::html

#endif  // UTIL_HTML_HTML_H_
