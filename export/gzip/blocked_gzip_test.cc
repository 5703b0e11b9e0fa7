#include "export/gzip/blocked_gzip.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace ledger::gzip {
namespace {

using ::ledger::testing::StatusIs;

std::string TempPath(const std::string& name) { return absl::StrCat(::testing::TempDir(), "/", name, "-", ::getpid()); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, std::string_view data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
}

// Text that compresses like a pack: JSON lines with hex, some of it random.
std::string Lines(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out;
  while (out.size() < bytes) {
    absl::StrAppend(&out, "{\"seq\":", out.size(), ",\"hash\":\"");
    for (int i = 0; i < 64; ++i) out += "0123456789abcdef"[rng() % 16];
    out += "\"}\n";
  }
  out.resize(bytes);
  return out;
}

// Every member, inflated by zlib as any gzip reader would: one stream.
std::string ZlibInflateAll(const std::string& gz) {
  std::string out;
  size_t at = 0;
  while (at < gz.size()) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, 16 + 15), Z_OK);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + at));
    z.avail_in = static_cast<uInt>(gz.size() - at);
    char buf[1 << 16];
    int rc;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      out.append(buf, sizeof buf - z.avail_out);
    } while (rc == Z_OK);
    EXPECT_EQ(rc, Z_STREAM_END) << "at byte " << at;
    at = gz.size() - z.avail_in;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) break;
  }
  return out;
}

// The little-endian 32-bit number at `at`.
uint32_t Le32(const std::string& bytes, size_t at) {
  uint32_t n = 0;
  for (int i = 3; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes[at + i]);
  return n;
}

// Where each member starts, by the EL length fields.
std::vector<size_t> MemberOffsets(const std::string& gz) {
  std::vector<size_t> out;
  for (size_t at = 0; at < gz.size();) {
    EXPECT_TRUE(IsBlocked(std::string_view(gz).substr(at)));
    out.push_back(at);
    at += Le32(gz, at + 16);
  }
  return out;
}

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  auto r = Reader::Open(path);
  if (!r.ok()) return r.status();
  std::string out;
  while (true) {
    auto piece = (*r)->Next();
    if (!piece.ok()) return piece.status();
    if (piece->empty()) return out;
    out.append(*piece);
  }
}

TEST(BlockedGzip, RoundTripReadableByZlibAndHashed) {
  std::string input = Lines(3 * kBlockBytes + 12345, 1);
  std::string path = TempPath("round");
  hash::Sha256Stream sha;
  Writer w(path, &sha);
  // Pieces of odd sizes, through both ways in.
  for (size_t at = 0; at < input.size(); at += 70001) {
    std::string_view piece = std::string_view(input).substr(at, 70001);
    if (at % 2) {
      w.Write(piece);
    } else {
      w.buffer()->append(piece);
      w.Spill();
    }
  }
  ASSERT_TRUE(w.Finish().ok());
  EXPECT_EQ(w.input_bytes(), input.size());
  EXPECT_EQ(hash::Hex(sha.Final()), hash::Hex(hash::Sha256(input)));
  std::string gz = ReadFile(path);
  EXPECT_EQ(ZlibInflateAll(gz), input);
  auto back = ReadAll(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, input);
  // Four members: three whole blocks and the rest.
  EXPECT_EQ(MemberOffsets(gz).size(), 4u);
}

TEST(BlockedGzip, SameInputSameBytesAndSplice) {
  std::string a = Lines(kBlockBytes + 999, 2), b = Lines(5000, 3);
  std::string part = TempPath("part"), one = TempPath("one"), two = TempPath("two");
  Writer p(part);
  p.Write(b);
  ASSERT_TRUE(p.Finish().ok());
  for (const std::string& path : {one, two}) {
    Writer w(path);
    w.Write(a);
    ASSERT_TRUE(w.Splice(part).ok());
    w.Write("tail");
    ASSERT_TRUE(w.Finish().ok());
  }
  EXPECT_EQ(ReadFile(one), ReadFile(two));
  EXPECT_EQ(ZlibInflateAll(ReadFile(one)), a + b + "tail");
  EXPECT_EQ(*ReadAll(one), a + b + "tail");
}

TEST(BlockedGzip, DamagedFilesAreRefusedNamingTheMember) {
  std::string input = Lines(2 * kBlockBytes + 10, 4);
  std::string path = TempPath("good");
  Writer w(path);
  w.Write(input);
  ASSERT_TRUE(w.Finish().ok());
  const std::string gz = ReadFile(path);
  std::vector<size_t> at = MemberOffsets(gz);
  ASSERT_EQ(at.size(), 3u);
  const size_t second = at[1];
  struct Case {
    std::string name, bytes, want;
  };
  std::string flipped = gz;
  flipped[second + 100] ^= 0x20;
  std::string crc = gz;
  crc[second - 8] ^= 1;
  std::string huge = gz;
  huge[second + 18] = 0x7f;
  std::string plain = gz;
  plain[second + 3] = 0;  // no FEXTRA
  std::string size = gz;
  size[second - 2] = 0x7f;  // ISIZE of the first member
  // The whole message each: the member and what is wrong with it.
  std::vector<Case> cases = {
      {"truncated", gz.substr(0, gz.size() - 3), absl::StrCat("gzip member at byte ", at[2], ": truncated")},
      {"header", gz + std::string("\x1f\x8b", 2),
       absl::StrCat("gzip member at byte ", gz.size(), ": truncated header")},
      // A byte of DEFLATE data flipped: it still inflates, to other bytes.
      {"deflate", flipped, absl::StrCat("gzip member at byte ", second, ": CRC-32 mismatch")},
      {"crc", crc, "gzip member at byte 0: CRC-32 mismatch"},
      {"length", huge,
       absl::StrCat("gzip member at byte ", second, ": length ", Le32(huge, second + 16), " is out of range")},
      {"plain", plain,
       absl::StrCat("gzip member at byte ", second, ": not a member this ledger writes (no EL length field)")},
      {"size", size,
       absl::StrCat("gzip member at byte 0: says it holds ", Le32(size, second - 4), " bytes, more than a block (",
                    kBlockBytes, ")")},
  };
  for (const Case& c : cases) {
    std::string bad = TempPath(c.name);
    WriteFile(bad, c.bytes);
    EXPECT_THAT(ReadAll(bad), StatusIs(absl::StatusCode::kInvalidArgument, c.want)) << c.name;
  }
  std::string other = TempPath("zlib");
  WriteFile(other, std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) + std::string(20, 'x'));
  EXPECT_THAT(Reader::Open(other), StatusIs(absl::StatusCode::kInvalidArgument, "gzip: not a blocked gzip file"));
}

}  // namespace
}  // namespace ledger::gzip
