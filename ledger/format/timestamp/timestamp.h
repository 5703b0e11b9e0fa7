// RFC 3161 time-stamps of checkpoint-time notes (CONTRACT section 5e): the
// time-stamp line a note carries, the token's checks against a verifier's
// TSA roots, the time rule, and the request and reply by which the ledger
// asks a time-stamping authority (TSA).
//
// The stamped bytes are the note's text (every line before the blank line,
// final newline included), the bytes the ledger's signature covers. A
// token is a DER TimeStampToken (CMS SignedData over a TSTInfo); the line
// that carries it is a note signature line,
//
//   — <TSA name> <base64(stamp ID || DER TimeStampToken)>\n
//
// with stamp ID = SHA-256(name || 0x0A || 0xFF || "evidence-ledger/rfc3161/v1")[:4].
//
// Pure: OpenSSL's TS and X.509 code, no I/O. Thread-safe: TsaRoots is
// immutable after Parse and may be shared.
#ifndef LEDGER_FORMAT_TIMESTAMP_TIMESTAMP_H_
#define LEDGER_FORMAT_TIMESTAMP_TIMESTAMP_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::timestamp {

inline constexpr std::string_view kStampIdentifier = "evidence-ledger/rfc3161/v1";
inline constexpr int64_t kDefaultMaxDelaySeconds = 60;

// The 4-byte stamp ID of a TSA name.
std::array<uint8_t, 4> StampId(std::string_view name);

// The time-stamp line for `token` (DER), newline included. INVALID_ARGUMENT
// when `name` is not a key name of C2SP signed-note.
absl::StatusOr<std::string> StampLine(std::string_view name, std::string_view token);

// The tokens of a signed note's time-stamp lines, in order (most notes hold
// none; section 5e allows one).
std::vector<std::string> FindStamps(std::string_view note);

// The note's text: the bytes before the blank line, final newline included.
// INVALID_ARGUMENT for a note without one.
absl::StatusOr<std::string_view> NoteText(std::string_view note);

// A verifier's TSA roots: PEM certificates, one or more.
class TsaRoots {
 public:
  // INVALID_ARGUMENT naming the rule for text with no certificate or with
  // one that does not parse.
  static absl::StatusOr<TsaRoots> Parse(std::string_view pem);
  size_t size() const;

 private:
  friend struct RootsAccess;
  struct Certs;
  std::shared_ptr<const Certs> certs_;
};

// What an accepted token says.
struct Stamp {
  std::string tsa;  // the signer's certificate's first CN, else its whole subject
  int64_t gen_time_us = 0;
  std::string gen_time;  // ISO 8601 UTC with the token's precision: 2026-12-05T09:00:00Z
};

// Checks one token over `text` by section 5e ("What the token must say"),
// steps 3 to 6 of "What a verifier checks": INVALID_ARGUMENT for data that
// is not a token or a hash other than SHA-256, PERMISSION_DENIED for
// another text's imprint or a signature or chain that fails. Messages
// start with "time stamp: ".
absl::StatusOr<Stamp> VerifyToken(std::string_view token, std::string_view text, const TsaRoots& roots);

// What a token says, read without checking its signature or imprint (for
// pages that list it unchecked, such as report.html's "Keys and time"):
// the TSA's name (the signer's certificate in the token, else "") and
// genTime. INVALID_ARGUMENT for data that is not a token.
absl::StatusOr<Stamp> Describe(std::string_view token);

// The time rule of section 5e: FAILED_PRECONDITION when the note's time
// (`note_time_us`) is after the stamp's, by whole seconds, or more than
// `max_delay_s` before it.
absl::Status CheckTime(int64_t note_time_us, const Stamp& stamp, int64_t max_delay_s);

// Every check of section 5e's "What a verifier checks" on a checkpoint-time
// note (`note`, as the pack holds it) whose time is `note_time_us`.
absl::StatusOr<Stamp> CheckNote(std::string_view note, int64_t note_time_us, const TsaRoots& roots,
                                int64_t max_delay_s = kDefaultMaxDelaySeconds);

// A TimeStampReq for `text` (section 5e, "Asking a TSA"): SHA-256 imprint,
// a random 64-bit nonce, certReq true, `policy` (a dotted OID) when set.
struct Request {
  std::string der;
  std::string nonce;  // big-endian bytes as the request carries them
};
absl::StatusOr<Request> MakeRequest(std::string_view text, std::string_view policy = {});

// The token of a TSA's TimeStampResp to `request`: DATA_LOSS for a reply
// that is not one, FAILED_PRECONDITION for a status other than granted or
// grantedWithMods (with the TSA's status text), PERMISSION_DENIED for a
// token whose nonce is not the request's. The token itself is not checked:
// VerifyToken does that.
absl::StatusOr<std::string> TokenFromReply(std::string_view reply, const Request& request);

}  // namespace ledger::timestamp

#endif  // LEDGER_FORMAT_TIMESTAMP_TIMESTAMP_H_
