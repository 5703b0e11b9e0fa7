#include "ledger/format/timestamp/timestamp.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ts.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"

namespace ledger::timestamp {

struct TsaRoots::Certs {
  std::vector<std::shared_ptr<X509>> certs;
  size_t size() const { return certs.size(); }
};

size_t TsaRoots::size() const { return certs_->size(); }

struct RootsAccess {
  static const std::vector<std::shared_ptr<X509>>& Of(const TsaRoots& r) { return r.certs_->certs; }
};

namespace {

constexpr std::string_view kSigPrefix = "\xe2\x80\x94 ";

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Pkcs7Ptr = std::unique_ptr<PKCS7, Deleter<PKCS7, PKCS7_free>>;
using TstInfoPtr = std::unique_ptr<TS_TST_INFO, Deleter<TS_TST_INFO, TS_TST_INFO_free>>;
using VerifyCtxPtr = std::unique_ptr<TS_VERIFY_CTX, Deleter<TS_VERIFY_CTX, TS_VERIFY_CTX_free>>;
using ReqPtr = std::unique_ptr<TS_REQ, Deleter<TS_REQ, TS_REQ_free>>;
using RespPtr = std::unique_ptr<TS_RESP, Deleter<TS_RESP, TS_RESP_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using AlgorPtr = std::unique_ptr<X509_ALGOR, Deleter<X509_ALGOR, X509_ALGOR_free>>;
using ImprintPtr = std::unique_ptr<TS_MSG_IMPRINT, Deleter<TS_MSG_IMPRINT, TS_MSG_IMPRINT_free>>;
using IntegerPtr = std::unique_ptr<ASN1_INTEGER, Deleter<ASN1_INTEGER, ASN1_INTEGER_free>>;
using ObjectPtr = std::unique_ptr<ASN1_OBJECT, Deleter<ASN1_OBJECT, ASN1_OBJECT_free>>;

std::string S(std::string_view v) { return std::string(v); }

// OpenSSL's queued errors, oldest first, as one line; the queue emptied.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    absl::StrAppend(&out, out.empty() ? "" : "; ", reason ? reason : absl::StrCat("error ", e));
  }
  return out.empty() ? "no reason given" : out;
}

// "2026-12-05T09:00:00Z", with `digits` of fraction when above 0.
std::string Iso(int64_t us, int digits) {
  time_t secs = static_cast<time_t>(us >= 0 ? us / 1'000'000 : (us - 999'999) / 1'000'000);
  int64_t frac = us - int64_t{secs} * 1'000'000;
  struct tm t {};
  gmtime_r(&secs, &t);
  std::string out = absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                                    t.tm_hour, t.tm_min, t.tm_sec);
  if (digits > 0) absl::StrAppend(&out, ".", absl::StrFormat("%06d", frac).substr(0, std::min(digits, 6)));
  return out + "Z";
}

// A GeneralizedTime of DER ("YYYYMMDDHHMMSS[.f...]Z"): microseconds and the
// digits of its fraction; false for another form.
bool ParseGeneralizedTime(std::string_view s, int64_t* us, int* digits) {
  if (s.size() < 15 || s.back() != 'Z') return false;
  auto num = [&](size_t at, size_t n, int* out) {
    *out = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      *out = *out * 10 + (s[i] - '0');
    }
    return true;
  };
  struct tm t {};
  int year, month;
  if (!num(0, 4, &year) || !num(4, 2, &month) || !num(6, 2, &t.tm_mday) || !num(8, 2, &t.tm_hour) ||
      !num(10, 2, &t.tm_min) || !num(12, 2, &t.tm_sec)) {
    return false;
  }
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  std::string_view rest = s.substr(14, s.size() - 15);
  int64_t frac = 0;
  *digits = 0;
  if (!rest.empty()) {
    if (rest.size() < 2 || rest[0] != '.') return false;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return false;
      if (*digits < 6) frac = frac * 10 + (c - '0');
      ++*digits;
    }
    for (int i = std::min(*digits, 6); i < 6; ++i) frac *= 10;
  }
  time_t secs = timegm(&t);
  *us = int64_t{secs} * 1'000'000 + frac;
  return true;
}

// The signer's name: its first CN, else its whole subject (RFC 2253).
std::string SignerName(X509* cert) {
  X509_NAME* subject = X509_get_subject_name(cert);
  int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (at >= 0) {
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
    if (n >= 0) {
      std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
      OPENSSL_free(utf8);
      return out;
    }
  }
  BioPtr bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), subject, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// One DER element's header at `in`: its length, header included, or 0 when
// it is not a definite length within `in`.
size_t ElementSize(std::string_view in) {
  if (in.size() < 2) return 0;
  size_t len = static_cast<uint8_t>(in[1]), head = 2;
  if (len & 0x80) {
    size_t n = len & 0x7f;
    if (n == 0 || n > 4 || in.size() < 2 + n) return 0;
    len = 0;
    for (size_t i = 0; i < n; ++i) len = len << 8 | static_cast<uint8_t>(in[2 + i]);
    head += n;
  }
  return head + len <= in.size() ? head + len : 0;
}

// The timeStampToken of a TimeStampResp (SEQUENCE { status, token }).
absl::StatusOr<std::string_view> TokenBytes(std::string_view reply) {
  size_t whole = ElementSize(reply);
  if (whole != reply.size() || reply[0] != 0x30) return absl::DataLossError("TSA: the reply is not one DER SEQUENCE");
  size_t head = 2 + ((static_cast<uint8_t>(reply[1]) & 0x80) ? (static_cast<uint8_t>(reply[1]) & 0x7f) : 0);
  std::string_view body = reply.substr(head);
  size_t status = ElementSize(body);
  if (status == 0) return absl::DataLossError("TSA: the reply's status does not parse");
  std::string_view token = body.substr(status);
  if (token.empty() || ElementSize(token) != token.size()) {
    return absl::DataLossError("TSA: the reply's token is not one DER element");
  }
  return token;
}

absl::Status NotAToken(std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("time stamp: not an RFC 3161 time-stamp token: ", S(why)));
}

}  // namespace

std::array<uint8_t, 4> StampId(std::string_view name) {
  std::string in = absl::StrCat(S(name), "\n\xff", S(kStampIdentifier));
  hash::Hash h = hash::Sha256(in);
  return {h[0], h[1], h[2], h[3]};
}

absl::StatusOr<std::string> StampLine(std::string_view name, std::string_view token) {
  if (!note::IsValidKeyName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("TSA name '", S(name), "': not a key name (no space, no '+')"));
  }
  std::array<uint8_t, 4> id = StampId(name);
  std::string data(reinterpret_cast<const char*>(id.data()), id.size());
  data.append(token);
  return absl::StrCat(S(kSigPrefix), S(name), " ", hash::Base64(data), "\n");
}

absl::StatusOr<std::string_view> NoteText(std::string_view note) {
  size_t blank = note.find("\n\n");
  if (blank == std::string_view::npos) {
    return absl::InvalidArgumentError("time stamp: the note has no blank line before its signatures");
  }
  return note.substr(0, blank + 1);
}

std::vector<std::string> FindStamps(std::string_view note) {
  std::vector<std::string> out;
  size_t blank = note.find("\n\n");
  if (blank == std::string_view::npos) return out;
  std::string_view rest = note.substr(blank + 2);
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (line.substr(0, kSigPrefix.size()) != kSigPrefix) continue;
    line.remove_prefix(kSigPrefix.size());
    size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    std::string_view name = line.substr(0, space);
    auto data = hash::Base64Decode(line.substr(space + 1));
    if (!data.ok() || data->size() < 5) continue;
    std::array<uint8_t, 4> id = StampId(name);
    if (std::memcmp(data->data(), id.data(), id.size()) != 0) continue;
    out.push_back(data->substr(4));
  }
  return out;
}

absl::StatusOr<TsaRoots> TsaRoots::Parse(std::string_view pem) {
  auto certs = std::make_shared<Certs>();
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs->certs.emplace_back(cert, X509_free);
  }
  unsigned long e = ERR_peek_last_error();
  bool clean_end = ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
  std::string errors = OpenSslErrors();
  if (!clean_end && e != 0) return absl::InvalidArgumentError(absl::StrCat("TSA roots: a certificate: ", errors));
  if (certs->certs.empty()) return absl::InvalidArgumentError("TSA roots: no PEM certificate");
  TsaRoots r;
  r.certs_ = std::move(certs);
  return r;
}

namespace {

// A token parsed: its CMS structure and its TSTInfo, genTime read.
struct Parsed {
  Pkcs7Ptr p7;
  TstInfoPtr tst;
  Stamp stamp;
};

absl::StatusOr<Parsed> ParseToken(std::string_view token) {
  ERR_clear_error();
  Parsed out;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(token.data());
  out.p7.reset(d2i_PKCS7(nullptr, &p, static_cast<long>(token.size())));
  if (out.p7 == nullptr) return NotAToken(OpenSslErrors());
  if (p != reinterpret_cast<const unsigned char*>(token.data()) + token.size()) {
    return NotAToken("bytes follow its DER");
  }
  if (!PKCS7_type_is_signed(out.p7.get())) return NotAToken("not CMS SignedData");
  out.tst.reset(PKCS7_to_TS_TST_INFO(out.p7.get()));
  if (out.tst == nullptr) return NotAToken(OpenSslErrors());
  if (long v = TS_TST_INFO_get_version(out.tst.get()); v != 1) return NotAToken(absl::StrCat("TSTInfo version ", v));
  const ASN1_GENERALIZEDTIME* gen = TS_TST_INFO_get_time(out.tst.get());
  int digits = 0;
  if (!ParseGeneralizedTime(std::string_view(reinterpret_cast<const char*>(ASN1_STRING_get0_data(gen)),
                                             static_cast<size_t>(ASN1_STRING_length(gen))),
                            &out.stamp.gen_time_us, &digits)) {
    return NotAToken("genTime is not a GeneralizedTime in UTC");
  }
  out.stamp.gen_time = Iso(out.stamp.gen_time_us, digits);
  return out;
}

// The name of the token's one signer, found among its certificates; ""
// when there is not exactly one.
std::string SignerOf(PKCS7* p7) {
  STACK_OF(X509)* signers = PKCS7_get0_signers(p7, nullptr, 0);
  std::string name = signers != nullptr && sk_X509_num(signers) == 1 ? SignerName(sk_X509_value(signers, 0)) : "";
  if (signers != nullptr) sk_X509_free(signers);
  ERR_clear_error();
  return name;
}

}  // namespace

absl::StatusOr<Stamp> Describe(std::string_view token) {
  auto parsed = ParseToken(token);
  if (!parsed.ok()) return parsed.status();
  parsed->stamp.tsa = SignerOf(parsed->p7.get());
  return parsed->stamp;
}

absl::StatusOr<Stamp> VerifyToken(std::string_view token, std::string_view text, const TsaRoots& roots) {
  auto parsed = ParseToken(token);
  if (!parsed.ok()) return parsed.status();
  Pkcs7Ptr& p7 = parsed->p7;
  TS_MSG_IMPRINT* imprint = TS_TST_INFO_get_msg_imprint(parsed->tst.get());
  const ASN1_OBJECT* alg = nullptr;
  int param_type = 0;
  const void* param = nullptr;
  X509_ALGOR_get0(&alg, &param_type, &param, TS_MSG_IMPRINT_get_algo(imprint));
  if (OBJ_obj2nid(alg) != NID_sha256 || (param_type != V_ASN1_UNDEF && param_type != V_ASN1_NULL)) {
    char oid[80];
    OBJ_obj2txt(oid, sizeof oid, alg, 1);
    return absl::InvalidArgumentError(absl::StrCat(
        "time stamp: hash algorithm ", oid,
        param_type != V_ASN1_UNDEF && param_type != V_ASN1_NULL ? " with parameters" : "", " is not SHA-256"));
  }
  ASN1_OCTET_STRING* msg = TS_MSG_IMPRINT_get_msg(imprint);
  std::string_view stamped(reinterpret_cast<const char*>(ASN1_STRING_get0_data(msg)),
                           static_cast<size_t>(ASN1_STRING_length(msg)));
  hash::Hash want = hash::Sha256(text);
  if (stamped != std::string_view(reinterpret_cast<const char*>(want.data()), want.size())) {
    return absl::PermissionDeniedError(absl::StrCat("time stamp: it stamps another text (imprint ", hash::Hex(stamped),
                                                    ", the note's text hashes to ", hash::Hex(want), ")"));
  }
  Stamp stamp = parsed->stamp;

  // The signature, the signing-certificate attribute and the chain, by
  // OpenSSL's TS code; the chain at genTime, any root a trust anchor.
  X509_STORE* store = X509_STORE_new();
  for (const auto& cert : RootsAccess::Of(roots)) X509_STORE_add_cert(store, cert.get());
  X509_VERIFY_PARAM* vp = X509_STORE_get0_param(store);
  X509_VERIFY_PARAM_set_time(vp, static_cast<time_t>(stamp.gen_time_us / 1'000'000));
  X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_PARTIAL_CHAIN);
  VerifyCtxPtr ctx(TS_VERIFY_CTX_new());
  TS_VERIFY_CTX_set_flags(ctx.get(), TS_VFY_SIGNATURE);
  TS_VERIFY_CTX_set_store(ctx.get(), store);  // the context owns it
  if (TS_RESP_verify_token(ctx.get(), p7.get()) != 1) {
    return absl::PermissionDeniedError(
        absl::StrCat("time stamp: not signed by a TSA of --tsa-root: ", OpenSslErrors()));
  }
  stamp.tsa = SignerOf(p7.get());
  if (stamp.tsa.empty()) {
    return absl::PermissionDeniedError("time stamp: not signed by a TSA of --tsa-root: no single signer certificate");
  }
  return stamp;
}

absl::Status CheckTime(int64_t note_time_us, const Stamp& stamp, int64_t max_delay_s) {
  if (note_time_us / 1'000'000 > stamp.gen_time_us / 1'000'000) {
    return absl::FailedPreconditionError(absl::StrCat("time stamp: the note's time ", Iso(note_time_us, 3),
                                                      " is after its stamp's time ", stamp.gen_time));
  }
  int64_t delay = stamp.gen_time_us - note_time_us;
  if (delay > max_delay_s * 1'000'000) {
    return absl::FailedPreconditionError(absl::StrCat(
        "time stamp: the note's time ", Iso(note_time_us, 3), " is ", delay / 1'000'000, " s before its stamp's time ",
        stamp.gen_time, ", more than the bound of ", max_delay_s, " s: stamped late, or backdated"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Stamp> CheckNote(std::string_view note, int64_t note_time_us, const TsaRoots& roots,
                                int64_t max_delay_s) {
  std::vector<std::string> stamps = FindStamps(note);
  if (stamps.size() > 1) return absl::InvalidArgumentError("time stamp: more than one time-stamp line");
  if (stamps.empty()) {
    return absl::FailedPreconditionError(
        "time stamp: missing: --tsa-root requires the checkpoint-time note to carry a time-stamp token");
  }
  auto text = NoteText(note);
  if (!text.ok()) return text.status();
  auto stamp = VerifyToken(stamps[0], *text, roots);
  if (!stamp.ok()) return stamp.status();
  if (auto s = CheckTime(note_time_us, *stamp, max_delay_s); !s.ok()) return s;
  return stamp;
}

absl::StatusOr<Request> MakeRequest(std::string_view text, std::string_view policy) {
  ERR_clear_error();
  hash::Hash digest = hash::Sha256(text);
  ReqPtr req(TS_REQ_new());
  AlgorPtr alg(X509_ALGOR_new());
  ImprintPtr imprint(TS_MSG_IMPRINT_new());
  if (!req || !alg || !imprint || !TS_REQ_set_version(req.get(), 1) ||
      !X509_ALGOR_set0(alg.get(), OBJ_nid2obj(NID_sha256), V_ASN1_NULL, nullptr) ||
      !TS_MSG_IMPRINT_set_algo(imprint.get(), alg.get()) ||
      !TS_MSG_IMPRINT_set_msg(imprint.get(), digest.data(), static_cast<int>(digest.size())) ||
      !TS_REQ_set_msg_imprint(req.get(), imprint.get()) || !TS_REQ_set_cert_req(req.get(), 1)) {
    return absl::InternalError(absl::StrCat("time-stamp request: ", OpenSslErrors()));
  }
  unsigned char random[8];
  if (RAND_bytes(random, sizeof random) != 1) return absl::InternalError("time-stamp request: no random nonce");
  random[0] |= 0x01;  // never a short nonce: 8 bytes, the first non-zero
  random[0] &= 0x7f;  // and positive, so DER adds no byte
  BnPtr bn(BN_bin2bn(random, sizeof random, nullptr));
  IntegerPtr nonce(BN_to_ASN1_INTEGER(bn.get(), nullptr));
  if (!nonce || !TS_REQ_set_nonce(req.get(), nonce.get())) {
    return absl::InternalError(absl::StrCat("time-stamp request: ", OpenSslErrors()));
  }
  if (!policy.empty()) {
    ObjectPtr oid(OBJ_txt2obj(S(policy).c_str(), 1));
    if (!oid) return absl::InvalidArgumentError(absl::StrCat("--tsa-policy: '", S(policy), "' is not a dotted OID"));
    if (!TS_REQ_set_policy_id(req.get(), oid.get())) {
      return absl::InternalError(absl::StrCat("time-stamp request: ", OpenSslErrors()));
    }
  }
  int n = i2d_TS_REQ(req.get(), nullptr);
  Request out;
  out.der.resize(static_cast<size_t>(n));
  unsigned char* w = reinterpret_cast<unsigned char*>(out.der.data());
  i2d_TS_REQ(req.get(), &w);
  out.nonce.assign(reinterpret_cast<const char*>(random), sizeof random);
  return out;
}

absl::StatusOr<std::string> TokenFromReply(std::string_view reply, const Request& request) {
  ERR_clear_error();
  const unsigned char* p = reinterpret_cast<const unsigned char*>(reply.data());
  RespPtr resp(d2i_TS_RESP(nullptr, &p, static_cast<long>(reply.size())));
  if (resp == nullptr || p != reinterpret_cast<const unsigned char*>(reply.data()) + reply.size()) {
    return absl::DataLossError(absl::StrCat("TSA: the reply is not a DER TimeStampResp: ", OpenSslErrors()));
  }
  TS_STATUS_INFO* info = TS_RESP_get_status_info(resp.get());
  long status = ASN1_INTEGER_get(TS_STATUS_INFO_get0_status(info));
  if (status != 0 && status != 1) {
    std::string words;
    if (const STACK_OF(ASN1_UTF8STRING)* text = TS_STATUS_INFO_get0_text(info)) {
      for (int i = 0; i < sk_ASN1_UTF8STRING_num(text); ++i) {
        const ASN1_UTF8STRING* s = sk_ASN1_UTF8STRING_value(text, i);
        absl::StrAppend(&words, words.empty() ? ": " : "; ",
                        std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                    static_cast<size_t>(ASN1_STRING_length(s))));
      }
    }
    return absl::FailedPreconditionError(absl::StrCat("TSA: status ", status, " (not granted)", words));
  }
  PKCS7* token = TS_RESP_get_token(resp.get());
  TS_TST_INFO* tst = TS_RESP_get_tst_info(resp.get());
  if (token == nullptr || tst == nullptr) return absl::DataLossError("TSA: a granted reply without a token");
  const ASN1_INTEGER* nonce = TS_TST_INFO_get_nonce(tst);
  BnPtr want(BN_bin2bn(reinterpret_cast<const unsigned char*>(request.nonce.data()),
                       static_cast<int>(request.nonce.size()), nullptr));
  BnPtr got(nonce ? ASN1_INTEGER_to_BN(nonce, nullptr) : nullptr);
  if (got == nullptr || BN_cmp(want.get(), got.get()) != 0) {
    return absl::PermissionDeniedError("TSA: the token's nonce is not the request's (a replayed or another reply)");
  }
  // The token's own bytes, as the TSA encoded them (its signature covers
  // them), not OpenSSL's encoding of what it parsed.
  auto slice = TokenBytes(reply);
  if (!slice.ok()) return slice.status();
  std::string out(*slice);
  return out;
}

}  // namespace ledger::timestamp
