// The receipt schema, computed once from proto/receipt.proto's descriptors:
// each kind's keys in canonical order with their fields and rules, and the
// JSON names of enum values. Shared by the files of ledger/format/receipt
// (validation and encoding, the JSON decoders, the in-place leaf reader);
// not part of the library's interface.
//
// Thread-safe: read-only once built.
#ifndef LEDGER_FORMAT_RECEIPT_INTERNAL_SCHEMA_H_
#define LEDGER_FORMAT_RECEIPT_INTERNAL_SCHEMA_H_

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "ledger/format/receipt/internal/accessors.h"
#include "receipt.pb.h"

namespace ledger::receipt::schema {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using Receipt = evidence::ledger::v1::Receipt;

// What a field's name says about its value (CONTRACT §3): digests are hex
// SHA-256, and money, durations, times, counts and sizes are not negative.
enum class Rule { kNone, kSha256, kNonNegative };

// One key of a flattened canonical receipt.
struct Member {
  std::string key;
  std::string prefix;                      // ',"key":' without the leading comma
  const FieldDescriptor* field = nullptr;  // null for "kind"
  bool in_body = false;
  Rule rule = Rule::kNone;
  // The field's generated setter (accessors.h), null for "kind", the
  // attributes and a field the table lacks.
  const accessors::Field* setter = nullptr;
};

// Keys of one kind's receipts in canonical (byte) order, computed once from
// the descriptors.
struct Layout {
  const FieldDescriptor* body = nullptr;
  // The body's generated accessor, null where the table lacks it.
  accessors::MutableBody mutable_body = nullptr;
  std::vector<Member> members;
  // Each key's members: [first, last) in `members`.
  absl::flat_hash_map<std::string, std::pair<uint32_t, uint32_t>> by_key;

  void Index() {
    std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.key < b.key; });
    for (uint32_t i = 0; i < members.size(); ++i) {
      auto [it, added] = by_key.try_emplace(members[i].key, i, i + 1);
      if (!added) it->second.second = i + 1;
    }
  }
};

// JSON names of enum values: the value name without the type's prefix,
// lowercased (EXEC_STATUS_TIMED_OUT -> "timed_out").
struct EnumNames {
  std::vector<std::string> by_number;
  std::map<std::string, int, std::less<>> by_name;
  std::string choices;  // "allow, deny"
};

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Integers that count or measure something and so cannot be negative.
inline bool IsNonNegative(std::string_view name) {
  return EndsWith(name, "_micros") || EndsWith(name, "_ms") || EndsWith(name, "_us") || EndsWith(name, "_tokens") ||
         EndsWith(name, "_bytes") || name == "dlp_findings" || name == "start_seq";
}

class Schema {
 public:
  Schema() {
    const Descriptor* d = Receipt::descriptor();
    std::vector<Member> common;
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->real_containing_oneof() != nullptr) continue;
      common.push_back(MakeMember(f->name(), f, false));
    }
    const auto* oneof = d->FindOneofByName("body");
    for (int i = 0; i < oneof->field_count(); ++i) {
      const FieldDescriptor* bf = oneof->field(i);
      Layout layout;
      layout.body = bf;
      layout.mutable_body = accessors::BodyOf(bf);
      layout.members = common;
      layout.members.push_back(MakeMember("kind", nullptr, false));
      const Descriptor* bd = bf->message_type();
      for (int k = 0; k < bd->field_count(); ++k) {
        layout.members.push_back(MakeMember(bd->field(k)->name(), bd->field(k), true));
      }
      layout.Index();
      layouts_[bf->number()] = std::move(layout);
      kinds_[bf->name()] = bf;
      if (!kind_choices_.empty()) kind_choices_ += ", ";
      kind_choices_ += bf->name();
    }
    none_.members = common;
    none_.Index();
  }

  const Layout& LayoutFor(int body_number) const {
    auto it = layouts_.find(body_number);
    return it == layouts_.end() ? none_ : it->second;
  }

  const FieldDescriptor* KindField(std::string_view name) const {
    auto it = kinds_.find(name);
    return it == kinds_.end() ? nullptr : it->second;
  }
  const std::string& kind_choices() const { return kind_choices_; }

  const EnumNames& Names(const EnumDescriptor* e) const {
    auto it = enums_.find(e);
    if (it != enums_.end()) return it->second;
    EnumNames n;
    std::string prefix = e->value(0)->name();
    prefix.resize(prefix.size() - std::string_view("UNSPECIFIED").size());
    for (int i = 0; i < e->value_count(); ++i) {
      const auto* v = e->value(i);
      if (v->number() == 0) continue;
      std::string json = v->name().substr(prefix.size());
      for (char& c : json) c = static_cast<char>(std::tolower(c));
      if (static_cast<int>(n.by_number.size()) <= v->number()) {
        n.by_number.resize(v->number() + 1);
      }
      n.by_number[v->number()] = json;
      n.by_name[json] = v->number();
      if (!n.choices.empty()) n.choices += ", ";
      n.choices += json;
    }
    return enums_.emplace(e, std::move(n)).first->second;
  }

 private:
  static Member MakeMember(std::string key, const FieldDescriptor* f, bool in_body) {
    Member m;
    m.prefix = absl::StrCat("\"", key, "\":");
    m.key = std::move(key);
    m.field = f;
    m.in_body = in_body;
    if (f != nullptr && !f->is_map()) m.setter = accessors::FieldOf(f);
    if (EndsWith(m.key, "_sha256")) {
      m.rule = Rule::kSha256;
    } else if (IsNonNegative(m.key)) {
      m.rule = Rule::kNonNegative;
    }
    return m;
  }

  std::map<int, Layout> layouts_;
  Layout none_;
  std::map<std::string, const FieldDescriptor*, std::less<>> kinds_;
  std::string kind_choices_;
  // Filled for every enum while the schema is constructed (below), read-only
  // afterwards.
  mutable std::map<const EnumDescriptor*, EnumNames> enums_;
};

// The schema, built once from the descriptors.
const Schema& GetSchema();

}  // namespace ledger::receipt::schema

#endif  // LEDGER_FORMAT_RECEIPT_INTERNAL_SCHEMA_H_
