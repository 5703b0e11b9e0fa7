// The receipt's fields through protoc's generated accessors, for the
// in-place leaf reader (ReadCanonical): setting a field through
// reflection looks up its offset, has-bit and string kind on every call,
// which cost the verifier about a tenth of its time at a million entries.
// The table in accessors.cc names each field of proto/receipt.proto and
// its accessor; a field it lacks (one added to the proto and not here) is
// read through reflection as before, and accessors_test.cc fails until it
// is added.
//
// Thread-safe: read-only once built.
#ifndef LEDGER_FORMAT_RECEIPT_INTERNAL_ACCESSORS_H_
#define LEDGER_FORMAT_RECEIPT_INTERNAL_ACCESSORS_H_

#include <cstdint>
#include <string>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "receipt.pb.h"

namespace ledger::receipt::accessors {

// One field's setter, by its type: exactly one is set. Each MUST be given
// the message the field belongs to (the receipt, or its body).
struct Field {
  // The field's string, to be filled (mutable_<field>()).
  std::string* (*mutable_string)(google::protobuf::Message* m) = nullptr;
  void (*set_int64)(google::protobuf::Message* m, int64_t v) = nullptr;
  // `v` MUST be a value of the field's enum.
  void (*set_enum)(google::protobuf::Message* m, int v) = nullptr;
};

// The setter of `f`, a field of Receipt or of one of its bodies, or null
// when the table has none.
const Field* FieldOf(const google::protobuf::FieldDescriptor* f);

// Sets the body `body` (a field of Receipt's oneof) of `r` and returns it
// (mutable_<body>()), or null when the table has no accessor for it.
using MutableBody = google::protobuf::Message* (*)(evidence::ledger::v1::Receipt* r);
MutableBody BodyOf(const google::protobuf::FieldDescriptor* body);

}  // namespace ledger::receipt::accessors

#endif  // LEDGER_FORMAT_RECEIPT_INTERNAL_ACCESSORS_H_
