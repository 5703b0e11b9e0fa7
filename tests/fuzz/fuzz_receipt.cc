// libFuzzer target: receipt decoding, validation and canonical encoding, and
// the leaf reader. Properties checked beyond "no crash":
//   - a receipt that canonicalizes re-decodes to the same canonical bytes;
//   - a leaf that parses re-encodes to exactly the input (ParseLeaf's own
//     contract), and canonical::Parse accepts every leaf ParseLeaf accepts;
//   - ReadLeaf, ParseLeaf's fast path, accepts only what ParseLeafByTree
//     accepts, and reads it the same way;
//   - a redacted line that parses (CONTRACT section 8) re-encodes to
//     exactly the input, is never a leaf, and its tail reads as the
//     skeleton it states.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "google/protobuf/util/message_differencer.h"
#include "ledger/format/canonical/canonical.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/receipt/redaction.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto r = ledger::receipt::FromJsonText(text); r.ok()) {
    for (auto author : {ledger::receipt::Author::kEmitter, ledger::receipt::Author::kLedger}) {
      auto c = ledger::receipt::Canonicalize(*r, author);
      if (!c.ok()) continue;
      auto again = ledger::receipt::FromJsonText(*c);
      if (!again.ok()) std::abort();
      auto c2 = ledger::receipt::Canonicalize(*again, author);
      if (!c2.ok() || *c2 != *c) std::abort();
    }
  }
  ledger::receipt::Entry fast;
  if (ledger::receipt::ReadLeaf(text, &fast)) {
    auto reference = ledger::receipt::ParseLeafByTree(text);
    if (!reference.ok() || reference->seq != fast.seq || reference->prev != fast.prev ||
        reference->run_prev != fast.run_prev || reference->team_prev != fast.team_prev ||
        reference->version != fast.version || reference->logged_at_us != fast.logged_at_us ||
        reference->emitter != fast.emitter ||
        !google::protobuf::util::MessageDifferencer::Equals(reference->receipt, fast.receipt)) {
      std::abort();
    }
  }
  auto parsed = ledger::canonical::Parse(text);
  if (auto e = ledger::receipt::ParseLeaf(text); e.ok()) {
    if (!parsed.ok()) std::abort();
    // Either version re-encodes to the very bytes, and the tail readers agree.
    std::string leaf = ledger::receipt::EncodeEntry(*e, ledger::receipt::Encode(e->receipt));
    if (leaf != text) std::abort();
    auto seq = ledger::receipt::SeqOf(text);
    if (!seq.ok() || *seq != e->seq) std::abort();
    auto link = ledger::receipt::TeamLinkOf(text);
    if (!link.ok() || link->version != e->version || link->team_prev != e->team_prev) std::abort();
  }
  if (auto r = ledger::receipt::ParseRedacted(text); r.ok()) {
    if (ledger::receipt::EncodeRedacted(*r) != text) std::abort();
    if (ledger::receipt::ParseLeaf(text).ok()) std::abort();
    auto seq = ledger::receipt::SeqOf(text);
    if (!seq.ok() || *seq != r->skeleton.seq) std::abort();
    auto run_prev = ledger::receipt::RunPrevOf(text);
    if (!run_prev.ok() || *run_prev != r->skeleton.run_prev) std::abort();
  }
  return 0;
}
