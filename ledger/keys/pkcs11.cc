#include "ledger/keys/pkcs11.h"

#include <dlfcn.h>
#include <sodium.h>

#include <cstring>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/files/files.h"
#include "util/sync/mutex.h"

// The standard's names for the structures' members (pParameter, ulValueLen).
#define CRYPTOKI_COMPAT 1
#include <p11-kit/pkcs11.h>

namespace ledger::keys {
namespace {

std::string Hex(CK_RV rv) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%08lx", static_cast<unsigned long>(rv));
  return buf;
}

// The names of the return values an operator meets; the rest by number.
std::string RvName(CK_RV rv) {
  static const std::map<CK_RV, const char*> kNames = {
      {CKR_OK, "CKR_OK"},
      {CKR_GENERAL_ERROR, "CKR_GENERAL_ERROR"},
      {CKR_ARGUMENTS_BAD, "CKR_ARGUMENTS_BAD"},
      {CKR_DEVICE_ERROR, "CKR_DEVICE_ERROR"},
      {CKR_DEVICE_REMOVED, "CKR_DEVICE_REMOVED"},
      {CKR_KEY_HANDLE_INVALID, "CKR_KEY_HANDLE_INVALID"},
      {CKR_KEY_TYPE_INCONSISTENT, "CKR_KEY_TYPE_INCONSISTENT"},
      {CKR_KEY_FUNCTION_NOT_PERMITTED, "CKR_KEY_FUNCTION_NOT_PERMITTED"},
      {CKR_MECHANISM_INVALID, "CKR_MECHANISM_INVALID"},
      {CKR_OBJECT_HANDLE_INVALID, "CKR_OBJECT_HANDLE_INVALID"},
      {CKR_PIN_INCORRECT, "CKR_PIN_INCORRECT"},
      {CKR_PIN_LOCKED, "CKR_PIN_LOCKED"},
      {CKR_SESSION_CLOSED, "CKR_SESSION_CLOSED"},
      {CKR_SESSION_HANDLE_INVALID, "CKR_SESSION_HANDLE_INVALID"},
      {CKR_TOKEN_NOT_PRESENT, "CKR_TOKEN_NOT_PRESENT"},
      {CKR_TOKEN_NOT_RECOGNIZED, "CKR_TOKEN_NOT_RECOGNIZED"},
      {CKR_USER_NOT_LOGGED_IN, "CKR_USER_NOT_LOGGED_IN"},
      {CKR_CRYPTOKI_NOT_INITIALIZED, "CKR_CRYPTOKI_NOT_INITIALIZED"},
      {CKR_TEMPLATE_INCONSISTENT, "CKR_TEMPLATE_INCONSISTENT"},
  };
  auto it = kNames.find(rv);
  return it == kNames.end() ? Hex(rv) : it->second;
}

absl::Status Fail(absl::StatusCode code, std::string_view what, CK_RV rv) {
  return absl::Status(code, absl::StrCat("pkcs11: ", std::string(what), ": ", RvName(rv)));
}

// The failures a new session and login may mend.
bool SessionLost(CK_RV rv) {
  return rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED || rv == CKR_USER_NOT_LOGGED_IN ||
         rv == CKR_DEVICE_REMOVED || rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_OBJECT_HANDLE_INVALID ||
         rv == CKR_KEY_HANDLE_INVALID || rv == CKR_DEVICE_ERROR;
}

// A fixed-width, blank-padded CK_TOKEN_INFO field as a string.
std::string Field(const unsigned char* p, size_t n) {
  std::string s(reinterpret_cast<const char*>(p), n);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

// A module loaded and initialized once per process, whatever number of
// keys use it: C_Initialize twice, or C_Finalize while another key signs,
// is an error the standard leaves to the caller to avoid.
class Module {
 public:
  static absl::StatusOr<std::shared_ptr<Module>> Load(const std::string& path) {
    static sync::Mutex mu;
    static auto* loaded = new std::map<std::string, std::weak_ptr<Module>>();
    sync::MutexLock lock(&mu);
    if (auto it = loaded->find(path); it != loaded->end()) {
      if (auto m = it->second.lock()) return m;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      return absl::UnavailableError(absl::StrCat("pkcs11: module-path: cannot load ", path, ": ", ::dlerror()));
    }
    auto get = reinterpret_cast<CK_C_GetFunctionList>(::dlsym(handle, "C_GetFunctionList"));
    CK_FUNCTION_LIST_PTR f = nullptr;
    if (get == nullptr || get(&f) != CKR_OK || f == nullptr) {
      ::dlclose(handle);
      return absl::UnavailableError(absl::StrCat("pkcs11: module-path: ", path, " is not a PKCS#11 library"));
    }
    CK_C_INITIALIZE_ARGS args{};
    args.flags = CKF_OS_LOCKING_OK;
    CK_RV rv = f->C_Initialize(&args);
    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      ::dlclose(handle);
      return Fail(absl::StatusCode::kUnavailable, absl::StrCat("C_Initialize of ", path), rv);
    }
    auto m = std::shared_ptr<Module>(new Module(f, rv == CKR_OK));
    (*loaded)[path] = m;
    return m;
  }

  // Finalized, but left loaded: a token's library may have handlers and
  // threads of its own that outlive C_Finalize (p11-kit leaves modules
  // loaded too), and loading it again is dlopen's no-op.
  ~Module() {
    if (finalize_) f_->C_Finalize(nullptr);
  }

  CK_FUNCTION_LIST_PTR f() const { return f_; }

 private:
  Module(CK_FUNCTION_LIST_PTR f, bool finalize) : f_(f), finalize_(finalize) {}

  CK_FUNCTION_LIST_PTR f_;
  bool finalize_;
};

bool IsEdwards25519Params(const std::string& der) {
  static const std::string kPrintable(
      "\x13\x0c"
      "edwards25519",
      14);
  static const std::string kOid("\x06\x03\x2b\x65\x70", 5);
  return der == kPrintable || der == kOid;
}

class TokenKey final : public Pkcs11Key {
 public:
  TokenKey(std::shared_ptr<Module> module, Pkcs11Uri uri, std::string pin)
      : module_(std::move(module)), uri_(std::move(uri)), pin_(std::move(pin)), where_(Describe(uri_)) {}

  ~TokenKey() override {
    sync::MutexLock lock(&mu_);
    CloseSession();
    sodium_memzero(pin_.data(), pin_.size());
  }

  // Opens the session, logs in, finds the key and its public half, and
  // signs a test message.
  absl::Status Start() {
    {
      sync::MutexLock lock(&mu_);
      auto found = Connect();
      if (!found.ok()) return found.status();
      public_key_ = found->public_key;
      info_ = found->info;
    }
    auto test = Sign("evidence-ledger pkcs11 key check\n");
    return test.status();
  }

  const note::PublicKey& public_key() const override { return public_key_; }
  std::string where() const override { return where_; }
  const Pkcs11KeyInfo& info() const override { return info_; }

  absl::StatusOr<note::Signature> Sign(std::string_view message) const override {
    sync::MutexLock lock(&mu_);
    note::Signature sig{};
    CK_RV rv = SignOnce(message, &sig);
    if (rv != CKR_OK && SessionLost(rv)) {
      CloseSession();
      auto found = Connect();
      if (!found.ok()) {
        return absl::UnavailableError(absl::StrCat("pkcs11: signing with ", where_, ": the session was lost (",
                                                   RvName(rv),
                                                   ") and could not be opened again: ", found.status().message()));
      }
      if (found->public_key != public_key_) {
        CloseSession();
        return absl::FailedPreconditionError(
            absl::StrCat("pkcs11: ", where_, " names another key than it did at start; nothing was signed"));
      }
      rv = SignOnce(message, &sig);
    }
    if (rv != CKR_OK) return Fail(absl::StatusCode::kUnavailable, absl::StrCat("C_Sign with ", where_), rv);
    if (crypto_sign_verify_detached(sig.data(), reinterpret_cast<const uint8_t*>(message.data()), message.size(),
                                    public_key_.data()) != 0) {
      return absl::InternalError(absl::StrCat("pkcs11: ", where_,
                                              " answered with a signature its public key does not verify; nothing "
                                              "was signed"));
    }
    return sig;
  }

  // Makes the key pair (Generate): no session may be open yet.
  absl::Status MakeKeyPair() {
    sync::MutexLock lock(&mu_);
    CK_TOKEN_INFO ti;
    if (absl::Status s = OpenSession(&ti); !s.ok()) return s;
    CK_FUNCTION_LIST_PTR f = module_->f();
    for (CK_OBJECT_CLASS cls : {CKO_PRIVATE_KEY, CKO_PUBLIC_KEY}) {
      for (bool by_id : {false, true}) {
        if ((by_id && !uri_.id) || (!by_id && !uri_.object)) continue;
        std::vector<CK_OBJECT_HANDLE> found;
        if (absl::Status s = Find(cls, by_id ? std::nullopt : uri_.object, by_id ? uri_.id : std::nullopt, &found);
            !s.ok()) {
          return s;
        }
        if (!found.empty()) {
          return absl::AlreadyExistsError(absl::StrCat("pkcs11: the token already holds a key with this ",
                                                       by_id ? "id" : "label", " (", where_,
                                                       "); a key is never replaced: choose another"));
        }
      }
    }
    CK_MECHANISM mech{CKM_EC_EDWARDS_KEY_PAIR_GEN, nullptr, 0};
    static const std::string kParams(
        "\x13\x0c"
        "edwards25519",
        14);
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    std::string label = uri_.object.value_or("");
    std::string id = uri_.id.value_or("");
    std::vector<CK_ATTRIBUTE> pub = {
        {CKA_TOKEN, &yes, sizeof yes},
        {CKA_VERIFY, &yes, sizeof yes},
        {CKA_EC_PARAMS, const_cast<char*>(kParams.data()), kParams.size()},
    };
    std::vector<CK_ATTRIBUTE> priv = {
        {CKA_TOKEN, &yes, sizeof yes},     {CKA_PRIVATE, &yes, sizeof yes}, {CKA_SENSITIVE, &yes, sizeof yes},
        {CKA_EXTRACTABLE, &no, sizeof no}, {CKA_SIGN, &yes, sizeof yes},
    };
    for (auto* t : {&pub, &priv}) {
      if (uri_.object) t->push_back({CKA_LABEL, label.data(), label.size()});
      if (uri_.id) t->push_back({CKA_ID, id.data(), id.size()});
    }
    CK_OBJECT_HANDLE pub_handle = 0, priv_handle = 0;
    CK_RV rv = f->C_GenerateKeyPair(session_, &mech, pub.data(), pub.size(), priv.data(), priv.size(), &pub_handle,
                                    &priv_handle);
    if (rv != CKR_OK) {
      return Fail(absl::StatusCode::kUnavailable,
                  absl::StrCat("C_GenerateKeyPair (CKM_EC_EDWARDS_KEY_PAIR_GEN) in ", where_), rv);
    }
    CloseSession();
    return absl::OkStatus();
  }

 private:
  CK_RV SignOnce(std::string_view message, note::Signature* sig) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (session_ == CK_INVALID_HANDLE) return CKR_SESSION_HANDLE_INVALID;
    CK_FUNCTION_LIST_PTR f = module_->f();
    CK_MECHANISM mech{CKM_EDDSA, nullptr, 0};
    CK_RV rv = f->C_SignInit(session_, &mech, key_);
    if (rv != CKR_OK) return rv;
    CK_ULONG len = sig->size();
    rv = f->C_Sign(session_, reinterpret_cast<CK_BYTE_PTR>(const_cast<char*>(message.data())), message.size(),
                   sig->data(), &len);
    if (rv == CKR_OK && len != sig->size()) return CKR_GENERAL_ERROR;
    return rv;
  }

  // The one slot whose token the URI matches.
  absl::StatusOr<CK_SLOT_ID> FindSlot(CK_TOKEN_INFO* info) const {
    CK_FUNCTION_LIST_PTR f = module_->f();
    CK_ULONG n = 0;
    CK_RV rv = f->C_GetSlotList(CK_TRUE, nullptr, &n);
    if (rv != CKR_OK) return Fail(absl::StatusCode::kUnavailable, "C_GetSlotList", rv);
    std::vector<CK_SLOT_ID> slots(n);
    rv = f->C_GetSlotList(CK_TRUE, slots.data(), &n);
    if (rv != CKR_OK) return Fail(absl::StatusCode::kUnavailable, "C_GetSlotList", rv);
    slots.resize(n);
    std::vector<CK_SLOT_ID> matched;
    for (CK_SLOT_ID slot : slots) {
      CK_TOKEN_INFO ti;
      if (f->C_GetTokenInfo(slot, &ti) != CKR_OK) continue;
      if (uri_.slot_id && *uri_.slot_id != slot) continue;
      if (uri_.token && Field(ti.label, sizeof ti.label) != *uri_.token) continue;
      if (uri_.manufacturer && Field(ti.manufacturerID, sizeof ti.manufacturerID) != *uri_.manufacturer) continue;
      if (uri_.model && Field(ti.model, sizeof ti.model) != *uri_.model) continue;
      if (uri_.serial && Field(ti.serialNumber, sizeof ti.serialNumber) != *uri_.serial) continue;
      if (matched.empty()) *info = ti;
      matched.push_back(slot);
    }
    if (matched.empty()) {
      return absl::NotFoundError(absl::StrCat("pkcs11: no token of the ", slots.size(), " present matches ", where_));
    }
    if (matched.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11: ", matched.size(), " tokens match ", where_, "; name one by its serial= or slot-id="));
    }
    return matched[0];
  }

  // Opens a session on the token and logs in; `ti` its CK_TOKEN_INFO.
  absl::Status OpenSession(CK_TOKEN_INFO* info) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto slot = FindSlot(info);
    if (!slot.ok()) return slot.status();
    const CK_TOKEN_INFO& ti = *info;
    const std::string label = Field(ti.label, sizeof ti.label);
    CK_FUNCTION_LIST_PTR f = module_->f();
    CK_RV rv = f->C_OpenSession(*slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr, nullptr, &session_);
    if (rv != CKR_OK) {
      session_ = CK_INVALID_HANDLE;
      return Fail(absl::StatusCode::kUnavailable, absl::StrCat("C_OpenSession on token '", label, "'"), rv);
    }
    if ((ti.flags & CKF_LOGIN_REQUIRED) == 0) return absl::OkStatus();
    if (uri_.pin_file.empty()) {
      CloseSession();
      return absl::InvalidArgumentError(absl::StrCat("pkcs11 URI: pin-source: token '", label,
                                                     "' needs a PIN; give pin-source=file:/path to a file holding it"));
    }
    rv = f->C_Login(session_, CKU_USER, reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(pin_.data())), pin_.size());
    if (rv == CKR_PIN_INCORRECT || rv == CKR_PIN_LOCKED || rv == CKR_PIN_INVALID || rv == CKR_PIN_LEN_RANGE) {
      CloseSession();
      return absl::PermissionDeniedError(
          absl::StrCat("pkcs11: token '", label, "' refused the PIN in ", uri_.pin_file, ": ", RvName(rv)));
    }
    if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
      CloseSession();
      return Fail(absl::StatusCode::kUnavailable, absl::StrCat("C_Login on token '", label, "'"), rv);
    }
    return absl::OkStatus();
  }

  void CloseSession() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (session_ != CK_INVALID_HANDLE) module_->f()->C_CloseSession(session_);
    session_ = CK_INVALID_HANDLE;
  }

  absl::Status Find(CK_OBJECT_CLASS cls, const std::optional<std::string>& label, const std::optional<std::string>& id,
                    std::vector<CK_OBJECT_HANDLE>* out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CK_FUNCTION_LIST_PTR f = module_->f();
    std::vector<CK_ATTRIBUTE> t = {{CKA_CLASS, &cls, sizeof cls}};
    if (label) t.push_back({CKA_LABEL, const_cast<char*>(label->data()), label->size()});
    if (id) t.push_back({CKA_ID, const_cast<char*>(id->data()), id->size()});
    CK_RV rv = f->C_FindObjectsInit(session_, t.data(), t.size());
    if (rv != CKR_OK) return Fail(absl::StatusCode::kUnavailable, "C_FindObjectsInit", rv);
    CK_OBJECT_HANDLE h[8];
    CK_ULONG n = 0;
    do {
      rv = f->C_FindObjects(session_, h, 8, &n);
      if (rv != CKR_OK) break;
      out->insert(out->end(), h, h + n);
    } while (n > 0 && out->size() < 64);
    f->C_FindObjectsFinal(session_);
    if (rv != CKR_OK) return Fail(absl::StatusCode::kUnavailable, "C_FindObjects", rv);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Attr(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type, std::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CK_FUNCTION_LIST_PTR f = module_->f();
    CK_ATTRIBUTE a{type, nullptr, 0};
    CK_RV rv = f->C_GetAttributeValue(session_, obj, &a, 1);
    if (rv != CKR_OK || a.ulValueLen == CK_UNAVAILABLE_INFORMATION || a.ulValueLen > 4096) {
      return Fail(absl::StatusCode::kInvalidArgument, absl::StrCat("reading ", std::string(name), " of ", where_), rv);
    }
    std::string v(a.ulValueLen, '\0');
    a.pValue = v.data();
    rv = f->C_GetAttributeValue(session_, obj, &a, 1);
    if (rv != CKR_OK) {
      return Fail(absl::StatusCode::kInvalidArgument, absl::StrCat("reading ", std::string(name), " of ", where_), rv);
    }
    v.resize(a.ulValueLen);
    return v;
  }

  bool Flag(CK_OBJECT_HANDLE obj, CK_ATTRIBUTE_TYPE type, bool otherwise) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CK_BBOOL v = CK_FALSE;
    CK_ATTRIBUTE a{type, &v, sizeof v};
    if (module_->f()->C_GetAttributeValue(session_, obj, &a, 1) != CKR_OK) return otherwise;
    return v == CK_TRUE;
  }

  struct Found {
    note::PublicKey public_key{};
    Pkcs11KeyInfo info;
  };

  // A session, logged in, and the key found on it (key_).
  absl::StatusOr<Found> Connect() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CK_TOKEN_INFO ti;
    if (absl::Status s = OpenSession(&ti); !s.ok()) return s;
    Found out;
    out.info.token_label = Field(ti.label, sizeof ti.label);
    out.info.token_model = Field(ti.model, sizeof ti.model);
    absl::Status s = FindKey(&out);
    if (!s.ok()) {
      CloseSession();
      return s;
    }
    return out;
  }

  absl::Status FindKey(Found* out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<CK_OBJECT_HANDLE> found;
    if (absl::Status s = Find(CKO_PRIVATE_KEY, uri_.object, uri_.id, &found); !s.ok()) return s;
    if (found.empty()) {
      return absl::NotFoundError(absl::StrCat("pkcs11: token '", out->info.token_label,
                                              "' holds no private key matching ", where_,
                                              " (or the PIN's user may not see it)"));
    }
    if (found.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11: ", found.size(), " private keys match ", where_, "; name one by both object= and id="));
    }
    key_ = found[0];
    auto type = Attr(key_, CKA_KEY_TYPE, "CKA_KEY_TYPE");
    if (!type.ok()) return type.status();
    CK_KEY_TYPE kt = 0;
    if (type->size() == sizeof kt) std::memcpy(&kt, type->data(), sizeof kt);
    if (kt != CKK_EC_EDWARDS) {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11: ", where_, " is not an Ed25519 key (CKA_KEY_TYPE ", Hex(kt), ", want CKK_EC_EDWARDS)"));
    }
    auto params = Attr(key_, CKA_EC_PARAMS, "CKA_EC_PARAMS");
    if (!params.ok()) return params.status();
    if (!IsEdwards25519Params(*params)) {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11: ", where_, " is an Edwards key but not on edwards25519 (Ed448?); notes need Ed25519"));
    }
    if (!Flag(key_, CKA_SIGN, true)) {
      return absl::InvalidArgumentError(absl::StrCat("pkcs11: ", where_, " may not sign (CKA_SIGN is false)"));
    }
    out->info.extractable = Flag(key_, CKA_EXTRACTABLE, false);
    out->info.sensitive = Flag(key_, CKA_SENSITIVE, true);
    // Its public half: the same id, else the same label.
    std::optional<std::string> id;
    if (auto v = Attr(key_, CKA_ID, "CKA_ID"); v.ok() && !v->empty()) id = *v;
    std::optional<std::string> label;
    if (auto v = Attr(key_, CKA_LABEL, "CKA_LABEL"); v.ok() && !v->empty()) label = *v;
    std::vector<CK_OBJECT_HANDLE> pubs;
    if (absl::Status s = Find(CKO_PUBLIC_KEY, id ? std::nullopt : label, id, &pubs); !s.ok()) return s;
    if (pubs.size() != 1) {
      return absl::NotFoundError(absl::StrCat("pkcs11: ", pubs.size(), " public keys beside ", where_,
                                              " have its id or label; want exactly one, to read its CKA_EC_POINT"));
    }
    auto point = Attr(pubs[0], CKA_EC_POINT, "CKA_EC_POINT");
    if (!point.ok()) return point.status();
    std::string_view p = *point;
    if (p.size() == 34 && p[0] == 0x04 && p[1] == 0x20) p.remove_prefix(2);  // DER OCTET STRING
    if (p.size() != 32) {
      return absl::InvalidArgumentError(absl::StrCat("pkcs11: the public key beside ", where_, " has a ", point->size(),
                                                     "-byte CKA_EC_POINT, not an Ed25519 key"));
    }
    std::memcpy(out->public_key.data(), p.data(), 32);
    return absl::OkStatus();
  }

  const std::shared_ptr<Module> module_;
  const Pkcs11Uri uri_;
  std::string pin_;
  const std::string where_;
  mutable sync::Mutex mu_;
  mutable CK_SESSION_HANDLE session_ ABSL_GUARDED_BY(mu_) = CK_INVALID_HANDLE;
  mutable CK_OBJECT_HANDLE key_ ABSL_GUARDED_BY(mu_) = CK_INVALID_HANDLE;
  // Set by Start before the key is shared, read only after.
  note::PublicKey public_key_{};
  Pkcs11KeyInfo info_;
};

absl::StatusOr<std::shared_ptr<TokenKey>> MakeKey(const Pkcs11Uri& uri) {
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to start");
  std::string pin;
  if (!uri.pin_file.empty()) {
    auto text = files::ReadFile(uri.pin_file);
    if (!text.ok()) {
      return absl::Status(text.status().code(), absl::StrCat("pkcs11 URI: pin-source: cannot read ", uri.pin_file, ": ",
                                                             text.status().message()));
    }
    pin = *std::move(text);
    while (!pin.empty() && (pin.back() == '\n' || pin.back() == '\r')) pin.pop_back();
  }
  auto module = Module::Load(uri.module_path);
  if (!module.ok()) return module.status();
  return std::make_shared<TokenKey>(*std::move(module), uri, std::move(pin));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Pkcs11Key>> Pkcs11Key::Open(const Pkcs11Uri& uri) {
  auto key = MakeKey(uri);
  if (!key.ok()) return key.status();
  if (absl::Status s = (*key)->Start(); !s.ok()) return s;
  return std::shared_ptr<const Pkcs11Key>(*std::move(key));
}

absl::StatusOr<std::shared_ptr<const Pkcs11Key>> Pkcs11Key::Generate(const Pkcs11Uri& uri) {
  if (!uri.object) {
    return absl::InvalidArgumentError("pkcs11 URI: object: required to make a key; it becomes the key's label");
  }
  auto key = MakeKey(uri);
  if (!key.ok()) return key.status();
  if (absl::Status s = (*key)->MakeKeyPair(); !s.ok()) return s;
  return Open(uri);
}

absl::StatusOr<std::shared_ptr<const Pkcs11Key>> OpenPkcs11Key(std::string_view uri) {
  auto parsed = ParsePkcs11Uri(uri);
  if (!parsed.ok()) return parsed.status();
  return Pkcs11Key::Open(*parsed);
}

}  // namespace ledger::keys
