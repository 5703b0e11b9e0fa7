#include "ledger/receipt/entry.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/canonical/canonical.h"
#include "nlohmann/json.hpp"

namespace ledger::receipt {
namespace {

absl::Status Bad(std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("leaf: ", std::string(why)));
}

}  // namespace

std::string EncodeLeaf(uint64_t seq, const hash::Hash& prev,
                       std::optional<uint64_t> run_prev, int64_t logged_at_us,
                       std::string_view emitter,
                       std::string_view canonical_receipt) {
  std::string out;
  EncodeLeafTo(&out, seq, prev, run_prev, logged_at_us, emitter, canonical_receipt);
  return out;
}

void EncodeLeafTo(std::string* out, uint64_t seq, const hash::Hash& prev,
                  std::optional<uint64_t> run_prev, int64_t logged_at_us,
                  std::string_view emitter, std::string_view canonical_receipt) {
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

absl::StatusOr<std::optional<uint64_t>> RunPrevOf(std::string_view leaf) {
  constexpr std::string_view kEnd = ",\"v\":1}", kSeq = ",\"seq\":", kRunPrev = ",\"run_prev\":";
  if (leaf.size() < kEnd.size() || leaf.substr(leaf.size() - kEnd.size()) != kEnd) {
    return Bad("not a version 1 leaf");
  }
  std::string_view rest = leaf.substr(0, leaf.size() - kEnd.size());
  auto take_number = [](std::string_view* s) -> std::optional<uint64_t> {
    size_t n = 0;
    while (n < s->size() && (*s)[s->size() - 1 - n] >= '0' && (*s)[s->size() - 1 - n] <= '9') ++n;
    if (n == 0 || n > 19) return std::nullopt;
    uint64_t v = 0;
    for (char c : s->substr(s->size() - n)) v = v * 10 + static_cast<uint64_t>(c - '0');
    s->remove_suffix(n);
    return v;
  };
  if (!take_number(&rest) || rest.size() < kSeq.size() ||
      rest.substr(rest.size() - kSeq.size()) != kSeq) {
    return Bad("no seq at the end");
  }
  rest.remove_suffix(kSeq.size());
  std::string_view probe = rest;
  auto run_prev = take_number(&probe);
  if (run_prev && probe.size() >= kRunPrev.size() &&
      probe.substr(probe.size() - kRunPrev.size()) == kRunPrev) {
    return std::optional<uint64_t>(*run_prev);
  }
  return std::optional<uint64_t>();
}

absl::StatusOr<Entry> ParseLeaf(std::string_view leaf) {
  nlohmann::json j = nlohmann::json::parse(leaf, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad("not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "emitter" && key != "logged_at_us" && key != "prev" &&
        key != "receipt" && key != "run_prev" && key != "seq" && key != "v") {
      return Bad("unknown field");
    }
  }
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || *v != kEntryFormatVersion) {
    return Bad("v: want format version 1");
  }
  Entry e;
  auto seq = j.find("seq");
  if (seq == j.end() || !seq->is_number_unsigned()) return Bad("seq: want an integer >= 0");
  e.seq = seq->get<uint64_t>();
  auto prev = j.find("prev");
  if (prev == j.end() || !prev->is_string()) return Bad("prev: want a hex hash");
  auto prev_hash = hash::ParseHex(prev->get_ref<const std::string&>());
  if (!prev_hash.ok()) return Bad("prev: want 64 lowercase hex digits");
  e.prev = *prev_hash;
  if (auto rp = j.find("run_prev"); rp != j.end()) {
    if (!rp->is_number_unsigned()) return Bad("run_prev: want an integer >= 0");
    e.run_prev = rp->get<uint64_t>();
  }
  auto at = j.find("logged_at_us");
  if (at == j.end() || !at->is_number_integer()) return Bad("logged_at_us: want an integer");
  e.logged_at_us = at->get<int64_t>();
  auto emitter = j.find("emitter");
  if (emitter == j.end() || !emitter->is_string()) return Bad("emitter: want a string");
  e.emitter = emitter->get<std::string>();
  auto r = j.find("receipt");
  if (r == j.end()) return Bad("receipt: missing");
  auto receipt = FromJson(*r);
  if (!receipt.ok()) {
    return Bad(absl::StrCat("receipt.", std::string(receipt.status().message())));
  }
  e.receipt = *std::move(receipt);
  if (EncodeLeaf(e.seq, e.prev, e.run_prev, e.logged_at_us, e.emitter,
                 Encode(e.receipt)) != leaf) {
    return Bad("not in canonical form");
  }
  return e;
}

}  // namespace ledger::receipt
