// .npy reading and writing: round trips for every dtype, numpy-written headers, and every kind of
// malformed file, each of which must give a clear kInvalid error (never a crash).
#include "tools/ptox/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/cli/test_util.h"

namespace ptox::cli {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// A file with magic, version 1.0 and `dict` as the header (no padding), followed by `data`.
std::string NpyV1(const std::string& dict, const std::string& data) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xFF));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict + data;
}

std::string Dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

NpyArray Patterned(DType dtype, std::vector<int64_t> shape) {
  Result<NpyArray> a = NpyArray::Allocate(dtype, std::move(shape));
  EXPECT_TRUE(a.ok()) << a.status().message();
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < a->nbytes(); ++i) a->data()[i] = static_cast<char>(rng());
  if (dtype == DType::kBool)
    for (size_t i = 0; i < a->nbytes(); ++i) a->data()[i] &= 1;
  return std::move(a).value();
}

TEST(Npy, RoundTripsEveryDtype) {
  TempDir dir;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kI32, DType::kI64,
                  DType::kBool, DType::kIndex}) {
    for (std::vector<int64_t> shape :
         std::vector<std::vector<int64_t>>{{3, 5}, {7}, {}, {2, 0, 4}}) {
      NpyArray a = Patterned(t, shape);
      std::string path = dir / "a.npy";
      ASSERT_TRUE(WriteNpy(path, a).ok());
      std::string bytes = ReadFile(path);
      EXPECT_EQ(bytes.size() % 64, a.nbytes() % 64) << "data must start 64-byte aligned";
      EXPECT_NE(bytes.find(std::string(DescrFor(t))), std::string::npos);
      Result<NpyArray> b = ReadNpy(path, t);
      ASSERT_TRUE(b.ok()) << b.status().message();
      EXPECT_EQ(b->dtype(), t) << DTypeName(t);
      EXPECT_EQ(b->shape(), shape);
      ASSERT_EQ(b->nbytes(), a.nbytes());
      if (a.nbytes() > 0) {  // an empty array may have no storage (null data)
        EXPECT_EQ(std::memcmp(a.data(), b->data(), a.nbytes()), 0) << DTypeName(t);
      }
    }
  }
}

TEST(Npy, WritesNumpyStyleHeader) {
  std::string h = EncodeNpyHeader(DType::kF32, {2, 3});
  // What numpy 1.x writes for np.zeros((2, 3), '<f4'): 128 bytes, header length 118.
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(h[8]) | static_cast<unsigned char>(h[9]) << 8, 118);
  EXPECT_EQ(h.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(h.substr(69, 58), std::string(58, ' '));
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(EncodeNpyHeader(DType::kI8, {5}).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(EncodeNpyHeader(DType::kBool, {}).find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(EncodeNpyHeader(DType::kBool, {}).find("'shape': ()"), std::string::npos);
}

TEST(Npy, BigHeaderUsesVersion2) {
  TempDir dir;
  std::vector<int64_t> shape(25000, 1);  // "1, " x 25000 > 65535 header bytes
  shape[0] = 3;
  NpyArray a = Patterned(DType::kI32, shape);
  ASSERT_TRUE(WriteNpy(dir / "big.npy", a).ok());
  std::string bytes = ReadFile(dir / "big.npy");
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ(bytes.size() % 64, 12u);  // a 64-byte-aligned header, then 3 x i32
  Result<NpyArray> b = ReadNpy(dir / "big.npy");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->shape(), shape);
  EXPECT_EQ(std::memcmp(a.data(), b->data(), 12), 0);
}

TEST(Npy, ReadsNumpyWrittenFiles) {
  TempDir dir;
  // np.save of np.array([[1, 2, 3], [4, 5, 6]], dtype='<i4') by numpy 1.x (16-byte alignment,
  // 80-byte prefix), and the same data in format 2.0 and 3.0.
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string padded = dict + std::string(80 - 10 - dict.size() - 1, ' ') + "\n";
  std::string data;
  for (int32_t v : {1, 2, 3, 4, 5, 6}) data.append(reinterpret_cast<const char*>(&v), 4);
  WriteFile(dir / "v1.npy", NpyV1(padded, data));
  for (char version : {'\x02', '\x03'}) {
    std::string v2("\x93NUMPY", 6);
    v2 += std::string{version, '\0'};
    uint32_t len = static_cast<uint32_t>(padded.size()) + 2;
    v2.append(reinterpret_cast<const char*>(&len), 4);
    WriteFile(dir / "v2.npy", v2 + padded + "  " + data);
    Result<NpyArray> a = ReadNpy(dir / "v2.npy");
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(a->shape(), (std::vector<int64_t>{2, 3}));
  }
  Result<NpyArray> a = ReadNpy(dir / "v1.npy");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->dtype(), DType::kI32);
  EXPECT_EQ(a->shape(), (std::vector<int64_t>{2, 3}));
  int32_t got[6];
  std::memcpy(got, a->data(), sizeof got);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[5], 6);
}

TEST(Npy, AcceptsHeaderVariants) {
  // Key order, double quotes, Python 2 longs, no trailing comma, 1-byte descr spellings.
  for (const char* dict :
       {"{'shape': (2L, 1L), 'fortran_order': False, 'descr': '<f2'}",
        "{\"descr\": \"<f2\", \"fortran_order\": False, \"shape\": ( 2 , 1 , ) }\n"}) {
    Result<NpyHeader> h = ParseNpyHeader(NpyV1(dict, ""), "x.npy");
    ASSERT_TRUE(h.ok()) << dict << ": " << h.status().message();
    EXPECT_EQ(h->descr, "<f2");
    EXPECT_EQ(h->shape, (std::vector<int64_t>{2, 1}));
  }
  EXPECT_EQ(*DTypeFromDescr("<i1", std::nullopt, "x"), DType::kI8);
  EXPECT_EQ(*DTypeFromDescr("|i1", std::nullopt, "x"), DType::kI8);
  EXPECT_EQ(*DTypeFromDescr("<u2", DType::kBF16, "x"), DType::kBF16);
  EXPECT_EQ(*DTypeFromDescr("<i8", DType::kIndex, "x"), DType::kIndex);
  EXPECT_EQ(*DTypeFromDescr("<i8", DType::kF32, "x"), DType::kI64);
}

// Writes `bytes` to a file and expects ReadNpy to fail with kInvalid mentioning `needle`.
void ExpectBad(const std::string& bytes, const std::string& needle,
               std::optional<DType> expect = std::nullopt) {
  TempDir dir;
  WriteFile(dir / "a.npy", bytes);
  Result<NpyArray> a = ReadNpy(dir / "a.npy", expect);
  ASSERT_FALSE(a.ok()) << "accepted: " << needle;
  EXPECT_EQ(a.status().code(), StatusCode::kInvalid);
  EXPECT_NE(a.status().message().find(needle), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("a.npy"), std::string::npos) << a.status().message();
}

TEST(NpyMalformed, TruncatedData) {
  std::string good = NpyV1(Dict("<f4", "(2, 3)"), std::string(24, '\0'));
  ExpectBad(good.substr(0, good.size() - 4), "expected 24 bytes of data, found 20");
  ExpectBad(good + "x", "expected 24 bytes of data, found 25");
}

TEST(NpyMalformed, MagicVersionAndLength) {
  ExpectBad("", "bad magic");
  ExpectBad("\x93NUMPZ\x01\x00\x00\x00", "bad magic");
  ExpectBad("hello world, this is not numpy", "bad magic");
  ExpectBad(std::string("\x93NUMPY\x04\x00\x10\x00", 10), "version 4.0");
  ExpectBad(std::string("\x93NUMPY\x01\x01\x10\x00", 10), "version 1.1");
  ExpectBad(std::string("\x93NUMPY\x01\x00", 8), "ends inside the header");
  ExpectBad(std::string("\x93NUMPY\x01\x00\xff\xff{}", 12), "header length 65535 exceeds");
  ExpectBad(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), "exceeds the file size");
}

TEST(NpyMalformed, BadDict) {
  ExpectBad(NpyV1("", ""), "expected '{'");
  ExpectBad(NpyV1("not a dict", ""), "expected '{'");
  ExpectBad(NpyV1("{'descr': '<f4', 'fortran_order': False}", ""), "must have the keys");
  ExpectBad(NpyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", ""),
            "unexpected key 'x'");
  ExpectBad(NpyV1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", ""),
            "duplicate key 'descr'");
  ExpectBad(NpyV1("{'descr': '<f4", ""), "unterminated string");
  ExpectBad(NpyV1("{'descr': '<f4' 'fortran_order': False}", ""), "expected ',' or '}'");
  ExpectBad(NpyV1(Dict("<f4", "(3)"), ""), "'shape' must be a tuple");
  ExpectBad(NpyV1(Dict("<f4", "[3, 4]"), ""), "'shape' must be a tuple");
  ExpectBad(NpyV1(Dict("<f4", "(3, x)"), ""), "expected a dimension");
  ExpectBad(NpyV1(Dict("<f4", "(3 4)"), ""), "expected ',' or ')'");
  ExpectBad(NpyV1("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", ""), "True or False");
  ExpectBad(NpyV1(Dict("<f4", "()") + " trailing", ""), "unexpected text after");
  ExpectBad(NpyV1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", ""),
            "structured dtypes");
  ExpectBad(NpyV1(Dict("\xc3\xa9", "(1,)"), std::string(4, '\0')), "non-ASCII");
}

TEST(NpyMalformed, FortranOrder) {
  ExpectBad(NpyV1(Dict("<f4", "(2, 2)", true), std::string(16, '\0')), "fortran_order=True");
}

TEST(NpyMalformed, NegativeAndOverflowingShapes) {
  ExpectBad(NpyV1(Dict("<f4", "(-3, 4)"), ""), "negative dimension");
  ExpectBad(NpyV1(Dict("<f4", "(4611686018427387904, 4)"), ""), "too large");
  ExpectBad(NpyV1(Dict("<i1", "(4294967296, 4294967296)"), ""), "too large");
  ExpectBad(NpyV1(Dict("<f4", "(99999999999999999999,)"), ""), "too large");
  // A zero dim makes the product 0 however big the others are.
  TempDir dir;
  WriteFile(dir / "z.npy", NpyV1(Dict("<f4", "(0, 4611686018427387904)"), ""));
  EXPECT_TRUE(ReadNpy(dir / "z.npy").ok());
}

TEST(NpyMalformed, UnsupportedDtypes) {
  ExpectBad(NpyV1(Dict("<f8", "(1,)"), std::string(8, '\0')), "unsupported dtype '<f8'");
  ExpectBad(NpyV1(Dict(">f4", "(1,)"), std::string(4, '\0')), "big-endian");
  ExpectBad(NpyV1(Dict("<u2", "(1,)"), std::string(2, '\0')), "only for bf16");
  ExpectBad(NpyV1(Dict("|b1", "(2,)"), std::string("\x01\x07", 2)), "byte value 7");
}

TEST(NpyMalformed, NotARegularFile) {
  TempDir dir;
  Result<NpyArray> a = ReadNpy(dir.path());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("not a regular file"), std::string::npos);
  Result<NpyArray> b = ReadNpy(dir / "missing.npy");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("cannot open"), std::string::npos);
}

// Every prefix of a valid file, and every single-byte corruption of its header, gives an error or
// a valid array: never a crash (run under ASan/UBSan in CI to catch overreads).
TEST(NpyMalformed, PrefixesAndCorruptionsNeverCrash) {
  TempDir dir;
  std::string good = NpyV1(Dict("<i4", "(2, 3)"), std::string(24, '\x01'));
  for (size_t n = 0; n < good.size(); ++n) {
    WriteFile(dir / "p.npy", good.substr(0, n));
    EXPECT_FALSE(ReadNpy(dir / "p.npy").ok()) << "prefix " << n;
  }
  std::mt19937 rng(7);
  for (size_t i = 0; i < good.size() - 24; ++i) {
    for (int k = 0; k < 8; ++k) {
      std::string bad = good;
      bad[i] = static_cast<char>(rng());
      WriteFile(dir / "c.npy", bad);
      Result<NpyArray> a = ReadNpy(dir / "c.npy");
      if (a.ok()) {
        EXPECT_EQ(a->nbytes(), 24u);
      }
    }
  }
}

TEST(NpyArray, AllocateRejectsBadShapes) {
  EXPECT_EQ(NpyArray::Allocate(DType::kF32, {-1}).status().code(), StatusCode::kInvalid);
  EXPECT_EQ(NpyArray::Allocate(DType::kF32, {1LL << 62, 4}).status().code(), StatusCode::kInvalid);
  Result<NpyArray> a = NpyArray::Allocate(DType::kI64, {3});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 8, 0u);
  Tensor v = a->view();
  EXPECT_EQ(v.data, a->data());
  EXPECT_EQ(v.ShapeString(), "3xi64");
}

}  // namespace
}  // namespace ptox::cli
