// libFuzzer target: what a witness and an auditor parse from strangers: the
// add-checkpoint body, signature lines and notes, and tlog-policy files.
// Properties: no crash; a body that parses has at most 63 proof hashes and
// checkpoint text of whole lines; a policy that parses has thresholds in
// [1, members] and a quorum that is "none" or a defined name.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ledger/format/cosign/cosign.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "witness/server/witness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = ledger::witness::ParseAddCheckpoint(in); r.ok()) {
    if (r->proof.size() > 63 || r->text.empty() || r->text.back() != '\n' || r->signatures.empty() ||
        r->note.substr(0, r->text.size()) != r->text) {
      std::abort();
    }
  }
  (void)ledger::cosign::SplitNote(in);
  (void)ledger::cosign::CosignatureVerifier::Parse(in);
  if (auto p = ledger::tlogpolicy::Policy::Parse(in); p.ok()) {
    bool defined = p->quorum() == "none";
    for (const auto& w : p->witnesses()) defined |= w.name == p->quorum();
    for (const auto& g : p->groups()) {
      if (g.threshold < 1 || g.threshold > g.members.size()) std::abort();
      defined |= g.name == p->quorum();
    }
    if (!defined) std::abort();
    (void)p->Evaluate(in);
  }
  return 0;
}
