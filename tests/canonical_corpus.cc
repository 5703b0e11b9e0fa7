// Writes a corpus of leaves, one per line, built by the ledger's own encoder
// from random receipts of every kind with awkward strings (every control
// character, quotes, backslashes, DEL, U+2028, non-ASCII, emoji, U+10FFFF)
// and integers at the JSON-safe bounds. canonical_python_test.py checks that
// Python's json.dumps(..., sort_keys=True, separators=(",", ":"),
// ensure_ascii=False) gives back exactly these bytes.
//
// Usage: canonical_corpus COUNT SEED
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "ledger/format/canonical/canonical.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"

namespace {

namespace pb = evidence::ledger::v1;

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  int Below(int n) { return static_cast<int>(rng_() % n); }

  // `printable`: none of the control characters (C0, DEL, C1) that ids may
  // not hold (CONTRACT section 3); free text keeps them all.
  std::string Text(int max_len, bool printable = false) {
    static const char* const kPieces[] = {"a",
                                          "Z",
                                          "0",
                                          " ",
                                          "\"",
                                          "\\",
                                          "/",
                                          "\x7f",
                                          "\xc2\x80",
                                          "\xc3\xa9",
                                          "\xe2\x80\xa8",
                                          "\xe2\x80\xa9",
                                          "\xe6\x97\xa5",
                                          "\xef\xbf\xbf",
                                          "\xf0\x9f\x98\x80",
                                          "\xf4\x8f\xbf\xbf",
                                          "<",
                                          "&",
                                          "'",
                                          "\t",
                                          "\n",
                                          "\r",
                                          "\b",
                                          "\f"};
    // The pieces before kFirstControl print as they are.
    constexpr int kFirstControl = 7;
    std::string out;
    int len = Below(max_len + 1);
    for (int i = 0; i < len; ++i) {
      if (printable) {
        // Pieces 0-6, then 9-18 ("\xc3\xa9" to "'"): not DEL, U+0080 or the controls after.
        int piece = Below(sizeof kPieces / sizeof kPieces[0] - 7);
        out += kPieces[piece < kFirstControl ? piece : piece + 2];
      } else if (Below(6) == 0) {
        out += static_cast<char>(Below(0x20));  // any control character, NUL included
      } else {
        out += kPieces[Below(sizeof kPieces / sizeof kPieces[0])];
      }
    }
    return out;
  }

  std::string Hex(int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += "0123456789abcdef"[Below(16)];
    return out;
  }

  int64_t Int() {
    switch (Below(5)) {
      case 0:
        return 0;
      case 1:
        return ledger::canonical::kMaxSafeInteger;
      case 2:
        return Below(1000);
      default:
        return static_cast<int64_t>(rng_() % ledger::canonical::kMaxSafeInteger);
    }
  }

  pb::Decision Decision() { return Below(2) ? pb::DECISION_ALLOW : pb::DECISION_DENY; }

  pb::Receipt Receipt(int i) {
    pb::Receipt r;
    r.set_receipt_id("c-" + std::to_string(i));
    r.set_team("team-" + std::to_string(Below(3)));
    r.set_run_id("run " + Text(8, true));
    r.set_step_id("step " + Text(8, true));
    if (Below(2)) r.set_attempt(1 + Below(3));
    if (Below(2)) r.set_workflow(Text(12, true));
    if (Below(2)) r.set_agent(Text(12, true));
    r.set_occurred_at_us(1 + Int() % ledger::canonical::kMaxSafeInteger);
    if (Below(2)) r.set_trace_id("1" + Hex(31));
    if (Below(2)) r.set_span_id("1" + Hex(15));
    for (int k = Below(5); k > 0; --k) {
      (*r.mutable_attributes())["k" + std::to_string(Below(40)) + "." + Hex(2)] = Text(20);
    }
    switch (i % 5) {
      case 0: {
        auto* b = r.mutable_agent_start();
        b->set_decision(Decision());
        b->set_reason("why " + Text(10));
        b->set_timeout_ms(1 + Below(86'400'000));
        if (Below(2)) b->set_cost_reserved_micros(Int());
        if (Below(2)) b->set_namespace_(Text(10));
        if (Below(2)) b->set_sandbox(Text(10));
        if (Below(2)) b->set_command_sha256(Hex(64));
        if (Below(2)) b->set_credential_id("cred-" + Hex(6));
        if (Below(2)) b->set_classification(Text(6));
        break;
      }
      case 1: {
        auto* b = r.mutable_agent_exec();
        b->set_start_receipt_id("c-" + std::to_string(i - 1));
        b->set_status(static_cast<pb::ExecStatus>(1 + Below(5)));
        if (Below(2)) b->set_exit_code(Below(2) ? -Int() : Int());
        if (Below(2)) b->set_duration_ms(Int());
        if (Below(2)) b->set_output_sha256(Hex(64));
        if (Below(2)) b->set_output_bytes(Int());
        if (Below(2)) b->set_dlp_findings(Below(4));
        if (Below(2)) b->set_cost_micros(Int());
        break;
      }
      case 2: {
        auto* b = r.mutable_model_call();
        b->set_provider(Text(6));
        b->set_model(Text(6));
        b->set_route("route " + Text(6));
        b->set_decision(Decision());
        if (Below(2)) b->set_reason(Text(20));
        if (Below(2)) b->set_input_tokens(Int());
        if (Below(2)) b->set_output_tokens(Int());
        if (Below(2)) b->set_cost_micros(Int());
        if (Below(2)) b->set_request_sha256(Hex(64));
        if (Below(2)) b->set_response_sha256(Hex(64));
        if (Below(2)) b->set_status_code(Below(600));
        if (Below(2)) b->set_latency_ms(Int());
        break;
      }
      case 3: {
        auto* b = r.mutable_tool_call();
        b->set_tool("tool " + Text(6));
        b->set_target(Text(20));
        b->set_decision(Decision());
        if (Below(2)) b->set_reason(Text(20));
        if (Below(2)) b->set_status_code(Below(600));
        if (Below(2)) b->set_latency_ms(Int());
        if (Below(2)) b->set_cost_micros(Int());
        break;
      }
      default: {
        auto* b = r.mutable_step_unknown();
        b->set_start_seq(Int());
        b->set_start_receipt_id("c-" + std::to_string(i));
        b->set_deadline_us(Int());
        break;
      }
    }
    return r;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: canonical_corpus COUNT SEED\n";
    return 2;
  }
  int count = std::atoi(argv[1]);
  Gen gen(static_cast<uint32_t>(std::atoi(argv[2])));
  ledger::hash::Hash prev{};
  for (int i = 0; i < count; ++i) {
    pb::Receipt r = gen.Receipt(i);
    auto canonical = ledger::receipt::Canonicalize(r, ledger::receipt::Author::kLedger);
    if (!canonical.ok()) {
      std::cerr << "receipt " << i << ": " << canonical.status() << "\n";
      return 1;
    }
    std::optional<uint64_t> run_prev;
    if (i > 0 && gen.Below(2)) run_prev = static_cast<uint64_t>(i - 1);
    std::string leaf =
        ledger::receipt::EncodeLeaf(i, prev, run_prev, gen.Int(), gen.Below(2) ? "ledger" : gen.Text(10), *canonical);
    prev = ledger::hash::LeafHash(leaf);
    std::cout << leaf << "\t" << ledger::hash::Hex(prev) << "\n";
  }
  return 0;
}
