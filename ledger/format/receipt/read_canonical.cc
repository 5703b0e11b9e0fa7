// The in-place reader of canonical receipts (receipt.h, ReadCanonical).
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/format/canonical/canonical.h"
#include "ledger/format/receipt/internal/accessors.h"
#include "ledger/format/receipt/internal/schema.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::receipt {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

namespace {

bool Take(const char** p, const char* end, char c) {
  if (*p == end || **p != c) return false;
  ++*p;
  return true;
}

// The body field named by the first '"kind":"' from `from` on, with where
// the search may resume. Only a guess: the same text can sit in an
// attribute, so the receipt is then read strictly against it.
const FieldDescriptor* GuessKind(const char** from, const char* end, std::string* scratch) {
  static constexpr std::string_view kKey = "\"kind\":";
  while (true) {
    const void* hit = memmem(*from, end - *from, kKey.data(), kKey.size());
    if (hit == nullptr) return nullptr;
    const char* p = static_cast<const char*>(hit) + kKey.size();
    *from = p;
    scratch->clear();
    if (!canonical::ReadString(&p, end, scratch)) continue;
    if (const FieldDescriptor* f = schema::GetSchema().KindField(*scratch)) return f;
  }
}

// "attributes": a non-empty object of strings, keys strictly ascending.
bool ReadAttributes(const char** p, const char* end, Receipt* out) {
  if (!Take(p, end, '{')) return false;
  std::string key, last;
  do {
    key.clear();
    if (!canonical::ReadString(p, end, &key) || !Take(p, end, ':')) return false;
    if (!out->attributes().empty() && !(last < key)) return false;
    std::string& value = (*out->mutable_attributes())[key];
    if (!canonical::ReadString(p, end, &value)) return false;
    last.swap(key);
  } while (Take(p, end, ','));
  return Take(p, end, '}');
}

}  // namespace

namespace {

// Sets the member `m` (not "kind", not the attributes) of `target` from
// the value at *p through reflection: the way for a field the accessor
// table lacks.
bool ReadByReflection(const schema::Member& m, const char** p, const char* end, Message* target, std::string* scratch) {
  const FieldDescriptor* f = m.field;
  const Reflection* rf = target->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: {
      // Encode leaves empty strings out.
      scratch->clear();
      if (!canonical::ReadString(p, end, scratch) || scratch->empty()) return false;
      rf->SetString(target, f, *scratch);
      return true;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!canonical::ReadInt(p, end, &v)) return false;
      rf->SetInt64(target, f, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      scratch->clear();
      if (!canonical::ReadString(p, end, scratch)) return false;
      const schema::EnumNames& names = schema::GetSchema().Names(f->enum_type());
      auto it = names.by_name.find(*scratch);
      if (it == names.by_name.end()) return false;
      rf->SetEnumValue(target, f, it->second);
      return true;
    }
    default:
      return false;
  }
}

// ReadCanonical for a receipt of the body `body_field`. Fields are set
// through their generated accessors (accessors.h): a string is read
// straight into the receipt's own, which keeps its memory when the
// receipt is cleared and read into again.
bool ReadAs(const FieldDescriptor* body_field, const char** pp, const char* end, Receipt* out, std::string* scratch) {
  const schema::Schema& receipts = schema::GetSchema();
  const schema::Layout& layout = receipts.LayoutFor(body_field->number());
  Message* body =
      layout.mutable_body != nullptr ? layout.mutable_body(out) : out->GetReflection()->MutableMessage(out, body_field);
  const std::vector<schema::Member>& members = layout.members;
  const char* p = *pp;
  if (!Take(&p, end, '{')) return false;
  bool kind_seen = false;
  // The keys are the layout's, in its (byte) order: each is found by
  // moving along the layout, which also proves them strictly ascending.
  size_t i = 0;
  do {
    while (i < members.size()) {
      const std::string& prefix = members[i].prefix;
      if (static_cast<size_t>(end - p) >= prefix.size() && p[1] == prefix[1] &&
          std::memcmp(p, prefix.data(), prefix.size()) == 0) {
        break;
      }
      ++i;
    }
    if (i == members.size()) return false;
    // As FromJsonT: the receipt's own field wins over a body field of the
    // same name.
    const schema::Member* m = &members[i];
    for (++i; i < members.size() && members[i].key == m->key; ++i) {
      if (m->in_body && !members[i].in_body) m = &members[i];
    }
    p += m->prefix.size();
    const FieldDescriptor* f = m->field;
    if (f == nullptr) {  // "kind"
      scratch->clear();
      if (!canonical::ReadString(&p, end, scratch) || *scratch != body_field->name()) return false;
      kind_seen = true;
      continue;
    }
    if (f->is_map()) {
      if (!ReadAttributes(&p, end, out)) return false;
      continue;
    }
    Message* target = m->in_body ? body : out;
    const accessors::Field* setter = m->setter;
    if (setter == nullptr) {
      if (!ReadByReflection(*m, &p, end, target, scratch)) return false;
    } else if (setter->mutable_string != nullptr) {
      // Encode leaves empty strings out. Each key comes once, so the
      // field is empty here.
      std::string* value = setter->mutable_string(target);
      if (!canonical::ReadString(&p, end, value) || value->empty()) return false;
    } else if (setter->set_int64 != nullptr) {
      int64_t v;
      if (!canonical::ReadInt(&p, end, &v)) return false;
      setter->set_int64(target, v);
    } else {
      scratch->clear();
      if (!canonical::ReadString(&p, end, scratch)) return false;
      const schema::EnumNames& names = receipts.Names(f->enum_type());
      auto it = names.by_name.find(*scratch);
      if (it == names.by_name.end()) return false;
      setter->set_enum(target, it->second);
    }
  } while (Take(&p, end, ','));
  // Encode writes "kind" always and an absent attempt as 1.
  if (!Take(&p, end, '}') || !kind_seen || !out->has_attempt()) return false;
  *pp = p;
  return true;
}

}  // namespace

bool ReadCanonical(const char** p, const char* end, Receipt* out) {
  // The members come in key order, so "kind" is rarely first. A receipt
  // whose attributes hold the same text is read against the next guess, a
  // few times at most: what is left goes the slow way.
  std::string scratch;
  const char* from = *p;
  for (int guesses = 0; guesses < 3; ++guesses) {
    const FieldDescriptor* body_field = GuessKind(&from, end, &scratch);
    if (body_field == nullptr) return false;
    if (ReadAs(body_field, p, end, out, &scratch)) return true;
    out->Clear();
  }
  return false;
}

}  // namespace ledger::receipt
