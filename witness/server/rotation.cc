// The witness follows a log's key rotations (CONTRACT section 5b,
// "Following a key rotation"; the statement is section 5d's): which keys
// count for a checkpoint of a size, POST add-key-rotation, and the record
// of the rotations followed, <origin hash>.keys (one JSON string a line:
// each rotation note, in the order followed), read back at start.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/format/note/key_set.h"
#include "nlohmann/json.hpp"
#include "util/files/files.h"
#include "util/jsonlog/jsonlog.h"
#include "witness/server/state.h"
#include "witness/server/witness.h"

namespace ledger::witness {
namespace {

Reply Said(int status, std::string body) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::string KeysPath(const std::string& dir, std::string_view origin) {
  return absl::StrCat(dir, "/", OriginHash(origin), ".keys");
}

}  // namespace

std::vector<note::Verifier> Witness::TrustedAt(const LogState& log, uint64_t size) {
  // The keys a rotation below `size` retired.
  std::vector<uint32_t> retired;
  for (const LogState::Rotation& r : log.rotations) {
    if (r.seq < size) retired.push_back(r.old_id);
  }
  auto live = [&retired](uint32_t id) { return std::find(retired.begin(), retired.end(), id) == retired.end(); };
  std::vector<note::Verifier> out;
  for (const note::Verifier& k : log.keys) {
    if (live(k.key_id())) out.push_back(k);
  }
  for (const LogState::Rotation& r : log.rotations) {
    if (r.seq < size && live(r.new_key.key_id())) out.push_back(r.new_key);
  }
  return out;
}

Reply Witness::Follow(LogState& log, std::string_view note_text) {
  auto statement = note::ParseKeyRotation(note_text);
  if (!statement.ok()) return Said(400, "not a key rotation statement (CONTRACT section 5d)\n");
  if (statement->origin != log.origin) return Said(404, "origin: not a log this witness is configured for\n");
  auto new_key = note::Verifier::Parse(statement->new_vkey);
  auto old_key = note::Verifier::Parse(statement->old_vkey);
  if (!new_key.ok() || !old_key.ok()) return Said(400, "old or new: not a verifier key\n");
  for (const LogState::Rotation& r : log.rotations) {
    if (r.note == note_text) return Said(200, "ok\n");  // followed already
    if (r.seq == statement->seq || r.old_id == old_key->key_id()) {
      return Said(409, absl::StrCat("a rotation of key ",
                                    statement->old_vkey.substr(
                                        0, statement->old_vkey.find('+', statement->old_vkey.find('+') + 1)),
                                    " at seq ", r.seq, " is recorded; this one says seq ", statement->seq, "\n"));
    }
  }
  bool trusted = false;
  for (const note::Verifier& k : TrustedAt(log, statement->seq)) trusted |= k.key_id() == old_key->key_id();
  if (!trusted) {
    return Said(403, absl::StrCat("old: not the key this witness trusts for '", log.origin, "' at size ",
                                  statement->seq, "\n"));
  }
  if (absl::Status s =
          note::CheckKeyRotation(log.origin, statement->seq, statement->old_vkey, statement->new_vkey, note_text);
      !s.ok()) {
    return Said(403, absl::StrCat(std::string(s.message()), "\n"));
  }
  log.rotations.push_back({statement->seq, old_key->key_id(), *new_key, std::string(note_text)});
  return Said(200, "ok\n");
}

Reply Witness::AddKeyRotation(std::string_view body, std::string_view peer) {
  if (OverFailures(peer)) return Said(429, "too many requests from this address did not verify; retry in a minute\n");
  auto statement = note::ParseKeyRotation(body);
  Reply reply;
  auto found = statement.ok() ? by_origin_.find(statement->origin) : by_origin_.end();
  if (!statement.ok()) {
    reply = Said(400, "not a key rotation statement (CONTRACT section 5d)\n");
  } else if (found == by_origin_.end()) {
    reply = Said(404, "origin: not a log this witness is configured for\n");
  } else {
    LogState& log = *found->second;
    ledger::sync::MutexLock lock(&log.mu);
    const size_t before = log.rotations.size();
    reply = Follow(log, body);
    if (reply.status == 200 && log.rotations.size() > before) {
      std::string kept;
      for (const LogState::Rotation& r : log.rotations) absl::StrAppend(&kept, nlohmann::json(r.note).dump(), "\n");
      if (absl::Status s = files::WriteFileAtomically(KeysPath(state_dir_, log.origin), kept); !s.ok()) {
        log.rotations.pop_back();
        reply = Said(503,
                     absl::StrCat("the record of the rotation could not be written: ", std::string(s.message()), "\n"));
      } else {
        jsonlog::Warn("witness_key_rotated")
            .Str("origin", log.origin)
            .Int("seq", static_cast<int64_t>(statement->seq))
            .Str("old_key", statement->old_vkey)
            .Str("new_key", statement->new_vkey)
            .Emit();
      }
    }
  }
  return Counted(std::move(reply), peer);
}

absl::Status Witness::LoadRotations(LogState& log) {
  const std::string path = KeysPath(state_dir_, log.origin);
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::OkStatus();  // no rotation followed
  ledger::sync::MutexLock lock(&log.mu);
  std::istringstream in(*text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    Reply followed = j.is_string() ? Follow(log, j.get<std::string>()) : Said(400, "not a JSON string\n");
    if (followed.status != 200) {
      return absl::DataLossError(absl::StrCat("witness state: ", path, " line ", number, ": ", followed.body,
                                              "; the witness will not start without the keys it followed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace ledger::witness
