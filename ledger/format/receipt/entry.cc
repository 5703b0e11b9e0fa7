#include "ledger/format/receipt/entry.h"

#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/canonical/canonical.h"
#include "ledger/format/receipt/redaction.h"

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

namespace {

// Everything up to the version's tail.
void EncodeLeafHead(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
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
}

}  // namespace

void EncodeLeafTo(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
                  int64_t logged_at_us, std::string_view emitter, std::string_view canonical_receipt) {
  EncodeLeafHead(out, seq, prev, run_prev, logged_at_us, emitter, canonical_receipt);
  out->append(",\"v\":1}");
}

void EncodeLeafV2To(std::string* out, uint64_t seq, const hash::Hash& prev, std::optional<uint64_t> run_prev,
                    std::optional<uint64_t> team_prev, int64_t logged_at_us, std::string_view emitter,
                    std::string_view canonical_receipt) {
  EncodeLeafHead(out, seq, prev, run_prev, logged_at_us, emitter, canonical_receipt);
  if (team_prev.has_value()) {
    out->append(",\"team_prev\":");
    canonical::AppendInt(static_cast<int64_t>(*team_prev), out);
  }
  out->append(",\"v\":2}");
}

std::string EncodeEntry(const Entry& e, std::string_view canonical_receipt) {
  std::string out;
  if (e.version == 1) {
    EncodeLeafTo(&out, e.seq, e.prev, e.run_prev, e.logged_at_us, e.emitter, canonical_receipt);
  } else {
    EncodeLeafV2To(&out, e.seq, e.prev, e.run_prev, e.team_prev, e.logged_at_us, e.emitter, canonical_receipt);
  }
  return out;
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

constexpr std::string_view kEndV1 = ",\"v\":1}", kEndV2 = ",\"v\":2}",
                           kSeq = ",\"seq\":", kRunPrev = ",\"run_prev\":", kTeamPrev = ",\"team_prev\":";

bool TakeSuffix(std::string_view* s, std::string_view suffix) {
  if (s->size() < suffix.size() || s->substr(s->size() - suffix.size()) != suffix) return false;
  s->remove_suffix(suffix.size());
  return true;
}

struct Tail {
  std::string_view rest;  // the leaf before ',"seq":'
  uint64_t seq = 0;
  TeamLink link;
};

// The leaf split before ',"seq":N' and its version's tail.
absl::StatusOr<Tail> SplitTail(std::string_view leaf) {
  Tail t;
  std::string_view rest = leaf;
  if (TakeSuffix(&rest, kEndV1)) {
    t.link.version = 1;
  } else if (TakeSuffix(&rest, kEndV2)) {
    t.link.version = 2;
    std::string_view probe = rest;
    if (auto team_prev = TakeNumber(&probe); team_prev && TakeSuffix(&probe, kTeamPrev)) {
      t.link.team_prev = *team_prev;
      rest = probe;
    }
  } else {
    return Bad("not a leaf of version 1 or 2");
  }
  auto seq = TakeNumber(&rest);
  if (!seq || !TakeSuffix(&rest, kSeq)) return Bad("no seq at the end");
  t.rest = rest;
  t.seq = *seq;
  return t;
}

}  // namespace

namespace {

// A redacted line (redaction.h) ends as the leaf it stands for, and one
// more '}': its tail is read as the leaf's.
std::string_view LeafTail(std::string_view leaf) {
  if (LooksRedacted(leaf) && leaf.ends_with("}}")) leaf.remove_suffix(1);
  return leaf;
}

}  // namespace

absl::StatusOr<std::optional<uint64_t>> RunPrevOf(std::string_view leaf) {
  auto tail = SplitTail(LeafTail(leaf));
  if (!tail.ok()) return tail.status();
  std::string_view probe = tail->rest;
  auto run_prev = TakeNumber(&probe);
  if (run_prev && TakeSuffix(&probe, kRunPrev)) return std::optional<uint64_t>(*run_prev);
  return std::optional<uint64_t>();
}

absl::StatusOr<uint64_t> SeqOf(std::string_view leaf) {
  auto tail = SplitTail(LeafTail(leaf));
  if (!tail.ok()) return tail.status();
  return tail->seq;
}

absl::StatusOr<TeamLink> TeamLinkOf(std::string_view leaf) {
  auto tail = SplitTail(LeafTail(leaf));
  if (!tail.ok()) return tail.status();
  return tail->link;
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
  const canonical::Value* top = &*parsed;
  if (LooksRedacted(leaf)) top = parsed->Find("redacted");
  const canonical::Value* r = top != nullptr ? top->Find("receipt") : nullptr;
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
  if (take(kEndV1)) {
    out->version = 1;
    return p == end;
  }
  out->version = 2;
  if (take(kTeamPrev)) {
    if (!canonical::ReadInt(&p, end, &n) || n < 0) return false;
    out->team_prev = static_cast<uint64_t>(n);
  }
  return take(kEndV2) && p == end;
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
        m.key != "seq" && m.key != "team_prev" && m.key != "v") {
      return Bad("unknown field");
    }
  }
  using Type = canonical::Value::Type;
  const canonical::Value* v = j.Find("v");
  if (v == nullptr || v->type != Type::kInt || (v->num != 1 && v->num != 2)) {
    return Bad("v: want format version 1 or 2");
  }
  Entry e;
  e.version = static_cast<int>(v->num);
  if (const canonical::Value* tp = j.Find("team_prev"); tp != nullptr) {
    if (e.version == 1) return Bad("team_prev: not a field of version 1");
    if (tp->type != Type::kInt || tp->num < 0) return Bad("team_prev: want an integer >= 0");
    e.team_prev = static_cast<uint64_t>(tp->num);
  }
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
  if (EncodeEntry(e, Encode(e.receipt)) != leaf) {
    return Bad("not in canonical form");
  }
  return e;
}

}  // namespace ledger::receipt
