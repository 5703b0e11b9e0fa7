#include "witness/server/witness.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/merkle/merkle.h"
#include "util/files/files.h"
#include "util/jsonlog/jsonlog.h"
#include "witness/server/state.h"

namespace ledger::witness {
namespace {

constexpr size_t kMaxProofLines = 63;

std::string S(std::string_view v) { return std::string(v); }
std::string S(absl::string_view v) { return std::string(v); }

bool ParseDecimal(std::string_view v, uint64_t* out) {
  if (v.empty() || (v.size() > 1 && v[0] == '0')) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && p == v.data() + v.size();
}

Reply Answer(int status, std::string body) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Reply Bad(std::string_view why) { return Answer(400, absl::StrCat(S(why), "\n")); }

}  // namespace

absl::StatusOr<note::Checkpoint> ParseCheckpointText(std::string_view text) {
  auto bad = [](std::string_view why) { return absl::InvalidArgumentError(absl::StrCat("checkpoint: ", S(why))); };
  if (text.empty() || text.back() != '\n') return bad("must end in a newline");
  std::string_view lines[3];
  std::string_view rest = text;
  for (auto& line : lines) {
    size_t eol = rest.find('\n');
    if (eol == std::string_view::npos) return bad("want at least three lines: origin, size, root");
    line = rest.substr(0, eol);
    rest.remove_prefix(eol + 1);
  }
  note::Checkpoint c;
  c.origin = S(lines[0]);
  if (c.origin.empty()) return bad("origin line is empty");
  if (!ParseDecimal(lines[1], &c.size)) return bad("size must be a decimal number without leading zeros");
  auto root = hash::Base64Decode(lines[2]);
  if (!root.ok() || root->size() != 32) return bad("root must be base64 of 32 bytes");
  std::memcpy(c.root.data(), root->data(), 32);
  if (rest.find("\n\n") != std::string_view::npos || rest.starts_with("\n"))
    return bad("extension lines must not be empty");
  return c;
}

absl::StatusOr<AddCheckpointRequest> ParseAddCheckpoint(std::string_view body) {
  auto bad = [](std::string_view why) { return absl::InvalidArgumentError(S(why)); };
  AddCheckpointRequest r;
  size_t eol = body.find('\n');
  std::string_view first = body.substr(0, eol);
  if (eol == std::string_view::npos || !first.starts_with("old ") || !ParseDecimal(first.substr(4), &r.old_size)) {
    return bad("old size line: want 'old ' and a decimal size without leading zeros, then a newline");
  }
  std::string_view rest = body.substr(eol + 1);
  while (true) {
    eol = rest.find('\n');
    if (eol == std::string_view::npos) return bad("consistency proof: want an empty line before the checkpoint");
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol + 1);
    if (line.empty()) break;
    if (r.proof.size() == kMaxProofLines) return bad("consistency proof: at most 63 lines");
    auto h = hash::Base64Decode(line);
    if (!h.ok() || h->size() != 32) {
      return bad(absl::StrCat("consistency proof: line ", r.proof.size() + 1, " is not base64 of 32 bytes"));
    }
    hash::Hash& out = r.proof.emplace_back();
    std::memcpy(out.data(), h->data(), 32);
  }
  r.note = S(rest);
  auto parts = cosign::SplitNote(rest);
  if (!parts.ok()) return parts.status();
  auto checkpoint = ParseCheckpointText(parts->text);
  if (!checkpoint.ok()) return checkpoint.status();
  r.text = std::move(parts->text);
  r.signatures = std::move(parts->signatures);
  r.origin = std::move(checkpoint->origin);
  r.size = checkpoint->size;
  r.root = checkpoint->root;
  return r;
}

absl::StatusOr<std::unique_ptr<Witness>> Witness::Open(std::string state_dir, cosign::Cosigner cosigner,
                                                       std::vector<note::Verifier> log_keys, Clock clock) {
  if (log_keys.empty()) return absl::InvalidArgumentError("logs: at least one log's verifier key is needed");
  std::unique_ptr<Witness> w(new Witness(std::move(state_dir), std::move(cosigner), std::move(clock)));
  for (note::Verifier& key : log_keys) {
    auto& log = w->by_origin_[key.name()];
    if (log == nullptr) {
      log = std::make_unique<LogState>();
      log->origin = key.name();
    }
    for (const note::Verifier& known : log->keys) {
      if (known.key_id() == key.key_id()) {
        return absl::InvalidArgumentError(absl::StrCat("logs: the key of '", key.name(), "' is given twice"));
      }
    }
    log->keys.push_back(std::move(key));
  }
  for (auto& [origin, log] : w->by_origin_) {
    if (absl::Status s = w->LoadRotations(*log); !s.ok()) return s;
    if (absl::Status s = w->Load(*log); !s.ok()) return s;
    w->by_hash_[OriginHash(origin)] = log.get();
  }
  return w;
}

absl::Status Witness::Load(LogState& log) {
  auto record = ReadRecord(state_dir_, log.origin);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return absl::OkStatus();
  auto damaged = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("witness state: the record of '", log.origin, "' (", state_dir_, "/",
                                            OriginHash(log.origin), ") ", why,
                                            "; the witness will not start without knowing what it cosigned"));
  };
  auto parts = cosign::SplitNote(**record);
  if (!parts.ok()) return damaged(S(parts.status().message()));
  auto checkpoint = ParseCheckpointText(parts->text);
  if (!checkpoint.ok()) return damaged(S(checkpoint.status().message()));
  if (checkpoint->origin != log.origin) return damaged("names another origin");
  auto mine = cosign::CosignatureVerifier::Parse(cosigner_.VerifierKey());
  if (!mine.ok() || !mine->Verify(*parts).ok()) return damaged("is not cosigned by this witness's key");
  ledger::sync::MutexLock lock(&log.mu);
  log.size = checkpoint->size;
  log.root = checkpoint->root;
  log.record = **std::move(record);
  return absl::OkStatus();
}

std::optional<Reply> Witness::CheckLogSignature(const LogState& log, const AddCheckpointRequest& request,
                                                std::vector<std::string>* verified) const {
  std::vector<note::Verifier> trusted;
  {
    ledger::sync::MutexLock lock(&log.mu);
    trusted = TrustedAt(log, request.size);
  }
  for (const note::Verifier& key : trusted) {
    auto opened = key.Open(request.note);
    if (opened.ok()) {
      for (const std::string& line : request.signatures) {
        auto parsed = cosign::ParseSignatureLine(line);
        if (parsed.ok() && parsed->name == key.name() && parsed->key_id() == key.key_id()) verified->push_back(line);
      }
      continue;
    }
    if (opened.status().code() == absl::StatusCode::kInvalidArgument) return Bad(S(opened.status().message()));
    bool has_line = false;
    for (const std::string& line : request.signatures) {
      auto parsed = cosign::ParseSignatureLine(line);
      has_line |= parsed.ok() && parsed->name == key.name() && parsed->key_id() == key.key_id();
    }
    if (has_line) return Answer(403, absl::StrCat(opened.status().message(), "\n"));
  }
  if (verified->empty())
    return Answer(403, absl::StrCat("signed note: no signature by a key trusted for '", log.origin, "'\n"));
  return std::nullopt;
}

Reply Witness::AddCheckpoint(std::string_view body, std::string_view peer) {
  if (OverFailures(peer)) {
    return Answer(429, absl::StrCat("too many requests from this address did not verify (at most ",
                                    kMaxFailuresPerMinute, " a minute); retry in a minute\n"));
  }
  return Counted(Add(body), peer);
}

Reply Witness::Counted(Reply reply, std::string_view peer) {
  CountFailure(peer, reply);
  if (reply.status != 200) {
    // Each refusal, for the operator (a 409 is a ledger whose idea of the
    // size last cosigned is behind, e.g. a node that took the lead of a
    // shard without the shard's record).
    jsonlog::Warn("witness_refused")
        .Int("status", reply.status)
        .Str("peer", S(peer))
        .Msg(reply.body.substr(0, reply.body.find('\n')))
        .Emit();
  }
  return reply;
}

bool Witness::OverFailures(std::string_view peer) {
  ledger::sync::MutexLock lock(&failures_mu_);
  if (uint64_t minute = clock_() / 60; minute != failures_minute_) {
    failures_minute_ = minute;
    failures_.clear();
  }
  auto it = failures_.find(peer);
  return it != failures_.end() && it->second >= kMaxFailuresPerMinute;
}

void Witness::CountFailure(std::string_view peer, const Reply& reply) {
  if (reply.status != 400 && reply.status != 403 && reply.status != 422) return;
  ledger::sync::MutexLock lock(&failures_mu_);
  ++failures_[std::string(peer)];
}

Reply Witness::Add(std::string_view body) {
  auto request = ParseAddCheckpoint(body);
  if (!request.ok()) return Bad(S(request.status().message()));
  auto found = by_origin_.find(request->origin);
  if (found == by_origin_.end()) return Answer(404, "origin: not a log this witness is configured for\n");
  LogState& log = *found->second;
  std::vector<std::string> log_lines;
  if (auto refused = CheckLogSignature(log, *request, &log_lines)) return *refused;
  if (request->old_size > request->size) {
    return Bad(absl::StrCat("old size ", request->old_size, " is above the checkpoint's size ", request->size));
  }
  ledger::sync::MutexLock lock(&log.mu);
  if (request->old_size != log.size) {
    Reply r = Answer(409, absl::StrCat(log.size, "\n"));
    r.content_type = "text/x.tlog.size";
    return r;
  }
  std::string why;
  if (request->size == 0 && request->root != hash::EmptyRoot()) {
    why = "a checkpoint of size 0 must have the empty tree's root";
  } else if (request->old_size == 0 && !request->proof.empty()) {
    why = "consistency proof: must be empty from size 0";
  } else if (request->old_size == request->size && request->root != log.root) {
    // Two roots the log signed for one size: a fork, whatever anyone sends later.
    why = absl::StrCat("checkpoint: size ", log.size, " was cosigned with root ", hash::Base64(hash::AsBytes(log.root)),
                       ", not ", hash::Base64(hash::AsBytes(request->root)));
    KeepEvidence(log, body, why, Evidence::kFork);
  } else if (request->old_size > 0) {
    absl::Status s =
        merkle::VerifyConsistency(request->old_size, request->size, log.root, request->root, request->proof);
    if (!s.ok()) {
      // A log-signed checkpoint that no proof joined to what was cosigned:
      // a fork, or the log's public checkpoint with a junk proof. Kept if
      // nothing is yet, never replacing what is.
      why = S(s.message());
      KeepEvidence(log, body, why, Evidence::kUnproven);
    }
  }
  if (!why.empty()) return Answer(422, absl::StrCat(why, "\n"));
  return Cosign(log, *request, log_lines);
}

Reply Witness::Cosign(LogState& log, const AddCheckpointRequest& request, const std::vector<std::string>& log_lines) {
  auto line = cosigner_.Cosign(request.text, clock_());
  if (!line.ok()) return Answer(500, "cosignature: could not sign\n");
  std::string record = absl::StrCat(request.text, "\n");
  for (const std::string& l : log_lines) absl::StrAppend(&record, l, "\n");
  absl::StrAppend(&record, *line);
  if (absl::Status s = WriteRecord(state_dir_, log.origin, record); !s.ok()) {
    jsonlog::Error("witness_write_failed").Str("origin", log.origin).Msg(S(s.message())).Emit();
    return Answer(503, "witness state: cannot be written; nothing was cosigned\n");
  }
  log.size = request.size;
  log.root = request.root;
  log.record = std::move(record);
  WithdrawUnproven(log, request.text);
  return Answer(200, *std::move(line));
}

std::string Witness::EvidencePath(const LogState& log, Evidence kind) const {
  return absl::StrCat(state_dir_, "/", OriginHash(log.origin), kind == Evidence::kFork ? ".fork" : ".refused");
}

void Witness::KeepEvidence(const LogState& log, std::string_view body, std::string_view why, Evidence kind) const {
  // The first of each kind is kept for the operator and never replaced by
  // a later request: the log's signatures make it evidence whoever sent
  // it, and no later request can make the witness forget it.
  std::string path = EvidencePath(log, kind);
  absl::Status s = files::CreateFileDurably(path, body);
  if (s.code() == absl::StatusCode::kAlreadyExists) {
    jsonlog::Info("witness_evidence_kept_already").Str("origin", log.origin).Str("kept", path).Msg(why).Emit();
    return;
  }
  jsonlog::Error(kind == Evidence::kFork ? "witness_fork" : "witness_inconsistent_checkpoint")
      .Str("origin", log.origin)
      .Str("kept", s.ok() ? path : "")
      .Msg(why)
      .Emit();
}

void Witness::WithdrawUnproven(const LogState& log, const std::string& cosigned_text) const {
  // Kept unproven evidence of the checkpoint just cosigned was no fork (a
  // junk proof with the log's own checkpoint): it makes room for real evidence.
  std::string path = EvidencePath(log, Evidence::kUnproven);
  auto kept = files::ReadFile(path);
  if (!kept.ok()) return;
  auto request = ParseAddCheckpoint(*kept);
  if (!request.ok() || request->text != cosigned_text) return;
  if (std::remove(path.c_str()) == 0) {
    jsonlog::Info("witness_evidence_withdrawn")
        .Str("origin", log.origin)
        .Msg("the checkpoint kept in " + path + " is now cosigned with a consistency proof: it was no fork")
        .Emit();
  }
}

Reply Witness::GetCheckpoint(std::string_view origin_hash) const {
  auto found = by_hash_.find(S(origin_hash));
  if (found == by_hash_.end()) return Answer(404, "no checkpoint cosigned for this origin hash\n");
  const LogState& log = *found->second;
  ledger::sync::MutexLock lock(&log.mu);
  if (log.record.empty()) return Answer(404, "no checkpoint cosigned for this origin hash\n");
  return Answer(200, log.record);
}

}  // namespace ledger::witness
