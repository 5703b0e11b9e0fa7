#include "ledger/receipt/entry.h"

#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/canonical/canonical.h"

namespace ledger::receipt {
namespace {

absl::Status Bad(std::string_view why) { return absl::InvalidArgumentError(absl::StrCat("leaf: ", std::string(why))); }

}  // namespace

std::string EncodeLeaf(uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev, int64_t logged_at_us,
                       std::string_view emitter, std::string_view canonical_receipt) {
  std::string out;
  EncodeLeafTo(&out, seq, prev, run_prev, logged_at_us, emitter, canonical_receipt);
  return out;
}

void EncodeLeafTo(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
                  int64_t logged_at_us, std::string_view emitter, std::string_view canonical_receipt) {
  out->reserve(out->size() + canonical_receipt.size() + emitter.size() + 160);
  out->append("{\"emitter\":");
  canonical::AppendString(emitter, out);
  out->append(",\"logged_at_us\":");
  canonical::AppendInt(logged_at_us, out);
  out->append(",\"prev\":\"");
  out->append(hash::Hex(prev));
  out->append("\",\"receipt\":");
  out->append(canonical_receipt);
  if (run_prev.has_value()) {
    out->append(",\"run_prev\":");
    canonical::AppendInt(static_cast<int64_t>(*run_prev), out);
  }
  out->append(",\"seq\":");
  canonical::AppendInt(static_cast<int64_t>(seq), out);
  out->append(",\"v\":1}");
}

namespace {

// Takes the decimal number (at most 19 digits) that ends `s`.
std::optional<uint64_t> TakeNumber(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && (*s)[s->size() - 1 - n] >= '0' && (*s)[s->size() - 1 - n] <= '9') ++n;
  if (n == 0 || n > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s->substr(s->size() - n)) v = v * 10 + static_cast<uint64_t>(c - '0');
  s->remove_suffix(n);
  return v;
}

constexpr std::string_view kEnd = ",\"v\":1}", kSeq = ",\"seq\":", kRunPrev = ",\"run_prev\":";

// The leaf before ",\"seq\":N,\"v\":1}", and N.
absl::StatusOr<std::pair<std::string_view, uint64_t>> SplitTail(std::string_view leaf) {
  if (leaf.size() < kEnd.size() || leaf.substr(leaf.size() - kEnd.size()) != kEnd) {
    return Bad("not a version 1 leaf");
  }
  std::string_view rest = leaf.substr(0, leaf.size() - kEnd.size());
  auto seq = TakeNumber(&rest);
  if (!seq || rest.size() < kSeq.size() || rest.substr(rest.size() - kSeq.size()) != kSeq) {
    return Bad("no seq at the end");
  }
  rest.remove_suffix(kSeq.size());
  return std::pair{rest, *seq};
}

}  // namespace

absl::StatusOr<std::optional<uint64_t>> RunPrevOf(std::string_view leaf) {
  auto tail = SplitTail(leaf);
  if (!tail.ok()) return tail.status();
  std::string_view probe = tail->first;
  auto run_prev = TakeNumber(&probe);
  if (run_prev && probe.size() >= kRunPrev.size() && probe.substr(probe.size() - kRunPrev.size()) == kRunPrev) {
    return std::optional<uint64_t>(*run_prev);
  }
  return std::optional<uint64_t>();
}

absl::StatusOr<uint64_t> SeqOf(std::string_view leaf) {
  auto tail = SplitTail(leaf);
  if (!tail.ok()) return tail.status();
  return tail->second;
}

absl::StatusOr<std::string> TeamOf(std::string_view leaf) {
  // A canonical leaf leaves an empty team out, as the tree below would not
  // find it.
  if (Entry e; ReadLeaf(leaf, &e)) {
    if (e.receipt.team().empty()) return Bad("no receipt.team");
    return std::move(*e.receipt.mutable_team());
  }
  auto parsed = canonical::Parse(leaf);
  if (!parsed.ok()) return Bad("not in canonical form");
  const canonical::Value* r = parsed->Find("receipt");
  const canonical::Value* team = r != nullptr ? r->Find("team") : nullptr;
  if (team == nullptr || team->type != canonical::Value::Type::kString) return Bad("no receipt.team");
  return team->str;
}

absl::StatusOr<Entry> ParseLeaf(std::string_view leaf) {
  Entry e;
  if (ReadLeaf(leaf, &e)) return e;
  return ParseLeafByTree(leaf);
}

bool ReadLeaf(std::string_view leaf, Entry* out) {
  const char* p = leaf.data();
  const char* end = p + leaf.size();
  auto take = [&](std::string_view s) {
    if (static_cast<size_t>(end - p) < s.size() || std::memcmp(p, s.data(), s.size()) != 0) return false;
    p += s.size();
    return true;
  };
  int64_t n;
  if (!take("{\"emitter\":") || !canonical::ReadString(&p, end, &out->emitter) || !take(",\"logged_at_us\":") ||
      !canonical::ReadInt(&p, end, &out->logged_at_us) || !take(",\"prev\":\"") || end - p < 64 ||
      !hash::ParseHexTo(std::string_view(p, 64), &out->prev)) {
    return false;
  }
  p += 64;
  if (!take("\",\"receipt\":") || !ReadCanonical(&p, end, &out->receipt)) return false;
  if (take(kRunPrev)) {
    if (!canonical::ReadInt(&p, end, &n) || n < 0) return false;
    out->run_prev = static_cast<uint64_t>(n);
  }
  if (!take(kSeq) || !canonical::ReadInt(&p, end, &n) || n < 0) return false;
  out->seq = static_cast<uint64_t>(n);
  return take(kEnd) && p == end;
}

absl::StatusOr<Entry> ParseLeafByTree(std::string_view leaf) {
  // Leaves are canonical, so the strict canonical reader is the only parser
  // needed; the re-encoding below catches what a grammar cannot (omitted
  // defaults, field values the encoder writes otherwise).
  auto parsed = canonical::Parse(leaf);
  if (!parsed.ok()) return Bad("not in canonical form");
  const canonical::Value& j = *parsed;
  if (j.type != canonical::Value::Type::kObject) return Bad("not a JSON object");
  for (const canonical::Member& m : j.members) {
    if (m.key != "emitter" && m.key != "logged_at_us" && m.key != "prev" && m.key != "receipt" && m.key != "run_prev" &&
        m.key != "seq" && m.key != "v") {
      return Bad("unknown field");
    }
  }
  using Type = canonical::Value::Type;
  const canonical::Value* v = j.Find("v");
  if (v == nullptr || v->type != Type::kInt || v->num != kEntryFormatVersion) {
    return Bad("v: want format version 1");
  }
  Entry e;
  const canonical::Value* seq = j.Find("seq");
  if (seq == nullptr || seq->type != Type::kInt || seq->num < 0) return Bad("seq: want an integer >= 0");
  e.seq = static_cast<uint64_t>(seq->num);
  const canonical::Value* prev = j.Find("prev");
  if (prev == nullptr || prev->type != Type::kString) return Bad("prev: want a hex hash");
  auto prev_hash = hash::ParseHex(prev->str);
  if (!prev_hash.ok()) return Bad("prev: want 64 lowercase hex digits");
  e.prev = *prev_hash;
  if (const canonical::Value* rp = j.Find("run_prev"); rp != nullptr) {
    if (rp->type != Type::kInt || rp->num < 0) return Bad("run_prev: want an integer >= 0");
    e.run_prev = static_cast<uint64_t>(rp->num);
  }
  const canonical::Value* at = j.Find("logged_at_us");
  if (at == nullptr || at->type != Type::kInt) return Bad("logged_at_us: want an integer");
  e.logged_at_us = at->num;
  const canonical::Value* emitter = j.Find("emitter");
  if (emitter == nullptr || emitter->type != Type::kString) return Bad("emitter: want a string");
  e.emitter = emitter->str;
  const canonical::Value* r = j.Find("receipt");
  if (r == nullptr) return Bad("receipt: missing");
  auto receipt = FromCanonical(*r);
  if (!receipt.ok()) {
    return Bad(absl::StrCat("receipt.", std::string(receipt.status().message())));
  }
  e.receipt = *std::move(receipt);
  if (EncodeLeaf(e.seq, e.prev, e.run_prev, e.logged_at_us, e.emitter, Encode(e.receipt)) != leaf) {
    return Bad("not in canonical form");
  }
  return e;
}

}  // namespace ledger::receipt
