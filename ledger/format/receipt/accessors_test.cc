// The accessor table (internal/accessors.h) against the descriptors: every
// field of the receipt and of each body has a generated setter of its type
// that sets that field and no other.
#include "ledger/format/receipt/internal/accessors.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ledger/format/receipt/receipt.h"

namespace ledger::receipt::accessors {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Each field of `m` (a message of its own type), set through the table,
// is that field, and only it, with the value given.
void ExpectEveryFieldSetsItself(const Message& prototype) {
  const Descriptor* d = prototype.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->real_containing_oneof() != nullptr || f->is_map()) continue;
    SCOPED_TRACE(f->full_name());
    const Field* setter = FieldOf(f);
    ASSERT_NE(setter, nullptr) << "no accessor for " << f->full_name() << ": add it to accessors.cc";
    std::unique_ptr<Message> m(prototype.New());
    const auto* rf = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        ASSERT_NE(setter->mutable_string, nullptr);
        *setter->mutable_string(m.get()) = f->name();
        EXPECT_EQ(rf->GetString(*m, f), f->name());
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        ASSERT_NE(setter->set_int64, nullptr);
        setter->set_int64(m.get(), 1000 + f->number());
        EXPECT_EQ(rf->GetInt64(*m, f), 1000 + f->number());
        EXPECT_TRUE(rf->HasField(*m, f));
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        ASSERT_NE(setter->set_enum, nullptr);
        int last = f->enum_type()->value(f->enum_type()->value_count() - 1)->number();
        setter->set_enum(m.get(), last);
        EXPECT_EQ(rf->GetEnumValue(*m, f), last);
        break;
      }
      default:
        ADD_FAILURE() << "a receipt field of a type ReadCanonical does not read";
    }
    std::vector<const FieldDescriptor*> set;
    rf->ListFields(*m, &set);
    EXPECT_EQ(set.size(), 1u);
  }
}

TEST(AccessorsTest, EveryReceiptFieldHasItsOwnSetter) { ExpectEveryFieldSetsItself(Receipt()); }

TEST(AccessorsTest, EveryBodyHasItsAccessorAndEachOfItsFieldsASetter) {
  const auto* body = Receipt::descriptor()->FindOneofByName("body");
  ASSERT_NE(body, nullptr);
  for (int i = 0; i < body->field_count(); ++i) {
    const FieldDescriptor* b = body->field(i);
    SCOPED_TRACE(b->name());
    MutableBody mutable_body = BodyOf(b);
    ASSERT_NE(mutable_body, nullptr) << "no accessor for the body " << b->name() << ": add it to accessors.cc";
    Receipt r;
    Message* m = mutable_body(&r);
    const auto* set = r.GetReflection()->GetOneofFieldDescriptor(r, body);
    EXPECT_EQ(set, b);
    EXPECT_EQ(m, &r.GetReflection()->GetMessage(r, b));
    ExpectEveryFieldSetsItself(*m);
  }
}

}  // namespace
}  // namespace ledger::receipt::accessors
