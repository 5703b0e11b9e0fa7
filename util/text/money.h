// Money as people read it, one way everywhere: a receipt's costs are
// integers of micro-units (cost_micros: millionths of a dollar), shown in
// dollars with all six decimals, so that no amount is rounded and the
// figure on a terminal, on the dashboard and in a pack's report.html
// (export/pack/report.cc, which signs it) is the same string.
//
//   dollars = ["-"] "$" 1*DIGIT "." 6DIGIT     ; e.g. "$0.200000", "$12.000042"
//
// JSON keeps the micros (an integer) as the receipts give them.
//
// Thread-safe: pure functions.
#ifndef UTIL_TEXT_MONEY_H_
#define UTIL_TEXT_MONEY_H_

#include <cstdint>
#include <string>

namespace ledger::text {

// `micros` millionths of a dollar as the grammar above writes them.
std::string Dollars(int64_t micros);

}  // namespace ledger::text

#endif  // UTIL_TEXT_MONEY_H_
