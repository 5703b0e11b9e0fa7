#include "ledger/format/note/key_set.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/internal/text.h"

namespace ledger::note {

using internal::kSigPrefix;
using internal::ParseDecimal;
using internal::S;
using internal::Split;

namespace {

// The key ids of a note's signature lines, in order; empty when the note
// has no blank line before them or a line is malformed.
std::vector<uint32_t> SignatureKeyIds(std::string_view note, std::string_view name) {
  std::vector<uint32_t> ids;
  size_t split = note.rfind("\n\n");
  if (split == std::string_view::npos) return {};
  std::string_view sigs = note.substr(split + 2);
  for (std::string_view line : Split(sigs, '\n')) {
    if (line.empty()) continue;
    if (!line.starts_with(kSigPrefix)) return {};
    line.remove_prefix(kSigPrefix.size());
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.substr(0, sp) != name) return {};
    auto sig = hash::Base64Decode(line.substr(sp + 1));
    if (!sig.ok() || sig->size() < 4) return {};
    const auto* b = reinterpret_cast<const uint8_t*>(sig->data());
    ids.push_back(uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3]);
  }
  return ids;
}

std::string Short(const Verifier& v) {
  char id[9];
  std::snprintf(id, sizeof id, "%08x", v.key_id());
  return absl::StrCat(v.name(), "+", id);
}

std::string Sizes(const KeySet::Range& r) {
  return r.until.has_value() ? absl::StrCat("sizes ", r.from, " to ", *r.until) : absl::StrCat("sizes from ", r.from);
}

}  // namespace

std::string FormatKeyRotation(std::string_view origin, uint64_t seq, std::string_view old_vkey,
                              std::string_view new_vkey) {
  return absl::StrCat(kKeyRotationHeader, "\n", S(origin), "\nseq ", seq, "\nold ", S(old_vkey), "\nnew ", S(new_vkey),
                      "\n");
}

absl::StatusOr<Checkpoint> ClaimedCheckpoint(std::string_view signed_note) {
  const size_t body_end = signed_note.find("\n\n");
  return ParseCheckpoint(signed_note.substr(0, body_end == std::string_view::npos ? 0 : body_end + 1));
}

absl::StatusOr<KeyRotationStatement> ParseKeyRotation(std::string_view note) {
  const size_t end = note.find("\n\n");
  std::vector<std::string_view> lines = Split(note.substr(0, end == std::string_view::npos ? 0 : end), '\n');
  KeyRotationStatement s;
  if (lines.size() != 5 || lines[0] != kKeyRotationHeader || !lines[2].starts_with("seq ") ||
      !ParseDecimal(lines[2].substr(4), &s.seq) || !lines[3].starts_with("old ") || !lines[4].starts_with("new ")) {
    return absl::InvalidArgumentError(
        "note: not a key rotation statement (header, origin, seq, old and new lines: CONTRACT section 5d)");
  }
  s.origin = S(lines[1]);
  s.old_vkey = S(lines[3].substr(4));
  s.new_vkey = S(lines[4].substr(4));
  return s;
}

absl::StatusOr<std::string> AddSignature(std::string_view signed_note, const Signer& signer) {
  size_t split = signed_note.rfind("\n\n");
  if (split == std::string_view::npos)
    return absl::InvalidArgumentError("signed note: no blank line before signatures");
  auto own = signer.Sign(signed_note.substr(0, split + 1));
  if (!own.ok()) return own.status();
  return absl::StrCat(S(signed_note), S(std::string_view(*own).substr(split + 2)));
}

absl::StatusOr<std::string> SignKeyRotation(std::string_view origin, uint64_t seq, const Signer& old_key,
                                            const Signer& new_key) {
  auto signed_by_old = old_key.Sign(FormatKeyRotation(origin, seq, old_key.VerifierKey(), new_key.VerifierKey()));
  if (!signed_by_old.ok()) return signed_by_old.status();
  return AddSignature(*signed_by_old, new_key);
}

absl::Status CheckKeyRotation(std::string_view origin, uint64_t seq, std::string_view old_vkey,
                              std::string_view new_vkey, std::string_view note) {
  auto old_key = Verifier::Parse(old_vkey);
  if (!old_key.ok())
    return absl::InvalidArgumentError(absl::StrCat("old_key: ", std::string(old_key.status().message())));
  auto new_key = Verifier::Parse(new_vkey);
  if (!new_key.ok())
    return absl::InvalidArgumentError(absl::StrCat("new_key: ", std::string(new_key.status().message())));
  if (old_key->name() != origin) {
    return absl::InvalidArgumentError(absl::StrCat("old_key: named '", old_key->name(), "', not the origin"));
  }
  if (new_key->name() != origin) {
    return absl::InvalidArgumentError(absl::StrCat("new_key: named '", new_key->name(), "', not the origin"));
  }
  if (old_key->key_id() == new_key->key_id() || old_vkey == new_vkey) {
    return absl::InvalidArgumentError("new_key: the same key as old_key (a rotation names another key)");
  }
  const std::string want = FormatKeyRotation(origin, seq, old_vkey, new_vkey);
  auto by_old = old_key->Open(note);
  if (!by_old.ok())
    return absl::InvalidArgumentError(absl::StrCat("note: by old_key: ", std::string(by_old.status().message())));
  if (*by_old != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("note: its text is not the statement of a rotation at seq ", seq, " from old_key to new_key"));
  }
  auto by_new = new_key->Open(note);
  if (!by_new.ok())
    return absl::InvalidArgumentError(absl::StrCat("note: by new_key: ", std::string(by_new.status().message())));
  const std::vector<uint32_t> ids = SignatureKeyIds(note, origin);
  if (ids.size() != 2 || ids[0] != old_key->key_id() || ids[1] != new_key->key_id()) {
    return absl::InvalidArgumentError("note: want exactly two signature lines, the old key's and then the new key's");
  }
  return absl::OkStatus();
}

absl::StatusOr<KeySet> KeySet::Of(std::string_view vkey) {
  auto v = Verifier::Parse(vkey);
  if (!v.ok()) return v.status();
  return KeySet::Of(std::vector<Range>{{S(vkey), *v, 0, std::nullopt}});
}

absl::StatusOr<KeySet> KeySet::Of(std::vector<Range> ranges) {
  if (ranges.empty()) return absl::InvalidArgumentError("key set: no key");
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.from < b.from; });
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].verifier.name() != ranges[0].verifier.name()) {
      return absl::InvalidArgumentError(absl::StrCat("key set: keys of two names, '", ranges[0].verifier.name(),
                                                     "' and '", ranges[i].verifier.name(), "' (one log's keys)"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (ranges[j].verifier.key_id() == ranges[i].verifier.key_id()) {
        return absl::InvalidArgumentError(absl::StrCat("key set: a key is listed twice (", ranges[i].vkey, ")"));
      }
    }
    if (i > 0 && (!ranges[i - 1].until.has_value() || *ranges[i - 1].until >= ranges[i].from)) {
      return absl::InvalidArgumentError(
          absl::StrCat("key set: the ranges of two keys overlap at size ", ranges[i].from));
    }
  }
  KeySet set;
  set.ranges_ = std::move(ranges);
  return set;
}

absl::StatusOr<KeySet> KeySet::Parse(std::string_view text) {
  std::vector<Range> ranges;
  int number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++number;
    if (line.empty() || line.starts_with("#")) continue;
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("key set: line ", number, ": ", S(why)));
    };
    std::vector<std::string_view> words = Split(line, ' ');
    auto v = Verifier::Parse(words[0]);
    if (!v.ok()) return bad(std::string(v.status().message()));
    Range r{S(words[0]), *v, 0, std::nullopt};
    size_t i = 1;
    if (i < words.size() && words[i] == "from") {
      if (i + 1 >= words.size() || !ParseDecimal(words[i + 1], &r.from)) return bad("from: want a decimal size");
      i += 2;
    }
    if (i < words.size() && words[i] == "until") {
      uint64_t until = 0;
      if (i + 1 >= words.size() || !ParseDecimal(words[i + 1], &until)) return bad("until: want a decimal size");
      r.until = until;
      i += 2;
    }
    if (i != words.size()) {
      return bad("want <verifier key>[ from <size>][ until <size>], single spaces, nothing after");
    }
    if (r.until.has_value() && r.from > *r.until) {
      return absl::InvalidArgumentError(absl::StrCat("key set: from ", r.from, " is above until ", *r.until));
    }
    ranges.push_back(std::move(r));
  }
  return KeySet::Of(std::move(ranges));
}

const KeySet::Range* KeySet::At(uint64_t size) const {
  for (const Range& r : ranges_) {
    if (r.Covers(size)) return &r;
  }
  return nullptr;
}

absl::Status KeySet::Follow(uint64_t seq, std::string_view old_vkey, std::string_view new_vkey, std::string_view note) {
  const Range* at = At(seq);
  if (at == nullptr || at->vkey != old_vkey) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the rotation at seq ", seq, ": its old key is not trusted at size ", seq, " (", S(old_vkey), ")"));
  }
  if (auto s = CheckKeyRotation(name(), seq, old_vkey, new_vkey, note); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the rotation at seq ", seq, ": ", std::string(s.message())));
  }
  auto new_key = Verifier::Parse(new_vkey);
  if (!new_key.ok()) return new_key.status();
  // A new key the set lists already keeps the range its user gave it.
  const bool new_listed = std::any_of(ranges_.begin(), ranges_.end(),
                                      [&](const Range& r) { return r.verifier.key_id() == new_key->key_id(); });
  std::vector<Range> next;
  for (const Range& r : ranges_) {
    if (r.vkey != old_vkey) {
      next.push_back(r);
      continue;
    }
    Range ended = r;
    ended.until = seq;
    next.push_back(ended);
    if (!new_listed && (!r.until.has_value() || *r.until > seq)) {
      next.push_back({S(new_vkey), *new_key, seq + 1, r.until});
    }
  }
  auto followed = Of(std::move(next));
  if (!followed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the rotation at seq ", seq, " to ", S(new_vkey),
                     " disagrees with the keys given: ", std::string(followed.status().message())));
  }
  *this = std::move(*followed);
  return absl::OkStatus();
}

absl::StatusOr<std::string> KeySet::Open(std::string_view signed_note, uint64_t size) const {
  const Range* at = At(size);
  if (at == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(
        "size ", size, ": no key is trusted for it (the keys: ",
        [&] {
          std::string all;
          for (const Range& r : ranges_) {
            absl::StrAppend(&all, all.empty() ? "" : ", ", Short(r.verifier), " ", Sizes(r));
          }
          return all;
        }(),
        ")"));
  }
  auto text = at->verifier.Open(signed_note);
  if (!text.ok() && absl::IsPermissionDenied(text.status())) {
    return absl::PermissionDeniedError(absl::StrCat("size ", size, ": no valid signature by ", Short(at->verifier),
                                                    ", the key trusted for ", Sizes(*at), " (",
                                                    std::string(text.status().message()), ")"));
  }
  return text;
}

}  // namespace ledger::note
