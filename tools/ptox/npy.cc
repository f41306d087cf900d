// .npy reading and writing: a small parser for the Python-literal header dict, strict size checks,
// and direct reads into aligned storage.
#include "tools/ptox/npy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <new>

#include "ptox/files.h"

namespace ptox::cli {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // numpy pads headers so the data starts 64-byte aligned

// Thrown inside this file only; turned into a kInvalid Status at the public functions.
struct NpyError {
  std::string message;
};

[[noreturn]] void Bad(const std::string& name, const std::string& what) {
  throw NpyError{fmt::format("error: {}: {}", name, what)};
}

// A recursive-descent parser for the header, a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  NpyHeader Parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    Expect('{');
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      std::string key = String();
      Expect(':');
      SkipSpace();
      if (key == "descr") {
        Once(seen_descr, key);
        if (Peek() == '[') Fail("structured dtypes ('descr' is a list) are not supported");
        h.descr = String();
      } else if (key == "fortran_order") {
        Once(seen_order, key);
        h.fortran_order = Bool();
      } else if (key == "shape") {
        Once(seen_shape, key);
        h.shape = Shape();
      } else {
        Fail(fmt::format("unexpected key '{}' in the header", key));
      }
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() != '}') Fail(fmt::format("expected ',' or '}}' in the header {}", Where()));
    }
    ++pos_;
    SkipSpace();
    if (pos_ != s_.size()) Fail(fmt::format("unexpected text after the header dict {}", Where()));
    if (!seen_descr || !seen_order || !seen_shape)
      Fail("the header must have the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const { Bad(name_, what); }
  std::string Where() const { return fmt::format("at header offset {}", pos_); }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) != nullptr) ++pos_;
  }
  void Expect(char c) {
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != c) Fail(fmt::format("expected '{}' {}", c, Where()));
    ++pos_;
  }
  void Once(bool& seen, const std::string& key) {
    if (seen) Fail(fmt::format("duplicate key '{}' in the header", key));
    seen = true;
  }
  std::string String() {
    SkipSpace();
    char q = Peek();
    if (q != '\'' && q != '"') Fail(fmt::format("expected a quoted string {}", Where()));
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) Fail("unterminated string in the header");
    std::string v(s_.substr(pos_ + 1, end - pos_ - 1));
    if (v.find('\\') != std::string::npos) Fail("escape sequences in header strings");
    pos_ = end + 1;
    return v;
  }
  bool Word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  bool Bool() {
    if (Word("True")) return true;
    if (Word("False")) return false;
    Fail(fmt::format("'fortran_order' must be True or False {}", Where()));
  }
  int64_t Int() {
    SkipSpace();
    if (Peek() == '-') Fail(fmt::format("negative dimension in 'shape' {}", Where()));
    if (Peek() < '0' || Peek() > '9') Fail(fmt::format("expected a dimension {}", Where()));
    int64_t v = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      int digit = Peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
        Fail("a dimension in 'shape' is too large");
      v = v * 10 + digit;
      ++pos_;
    }
    if (Peek() == 'L') ++pos_;  // Python 2 long literal, written by old numpy
    return v;
  }
  std::vector<int64_t> Shape() {
    if (Peek() != '(') Fail(fmt::format("'shape' must be a tuple {}", Where()));
    ++pos_;
    std::vector<int64_t> dims;
    bool comma = false;
    while (true) {
      SkipSpace();
      if (Peek() == ')') break;
      dims.push_back(Int());
      SkipSpace();
      if (Peek() == ',') {
        comma = true;
        ++pos_;
      } else if (Peek() != ')') {
        Fail(fmt::format("expected ',' or ')' in 'shape' {}", Where()));
      }
    }
    ++pos_;
    if (dims.size() == 1 && !comma) Fail("'shape' must be a tuple: write (N,) for one dimension");
    return dims;
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
};

uint32_t ReadLe(std::string_view b, size_t at, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

NpyHeader ParseHeaderOrThrow(std::string_view bytes, const std::string& name) {
  if (bytes.size() < kMagicLen + 2 || bytes.substr(0, kMagicLen) != std::string_view(kMagic))
    Bad(name, "not a .npy file (bad magic string)");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    Bad(name, fmt::format("unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", major,
                          minor));
  size_t len_bytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + len_bytes;
  if (bytes.size() < prefix) Bad(name, "file ends inside the header");
  size_t header_len = ReadLe(bytes, kMagicLen + 2, static_cast<int>(len_bytes));
  if (bytes.size() - prefix < header_len)
    Bad(name, fmt::format("header length {} exceeds the file size {}", header_len, bytes.size()));
  std::string_view dict = bytes.substr(prefix, header_len);
  if (major < 3) {
    for (char c : dict)
      if (static_cast<unsigned char>(c) >= 0x80) Bad(name, "non-ASCII byte in a 1.0/2.0 header");
  }
  NpyHeader h = DictParser(dict, name).Parse();
  h.major_version = major;
  h.data_offset = prefix + header_len;
  if (h.fortran_order)
    Bad(name,
        "fortran_order=True is not supported: save a C-order array "
        "(numpy.ascontiguousarray)");
  return h;
}

// Reads exactly `n` bytes from `fd` into `dst`; returns the number read (short at EOF).
size_t ReadFully(int fd, char* dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, dst + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

void CheckBools(const NpyArray& a, const std::string& path) {
  const char* p = a.data();
  for (size_t i = 0; i < a.nbytes(); ++i)
    if (p[i] != 0 && p[i] != 1)
      Bad(path, fmt::format("bool element {} has byte value {} (expected 0 or 1)", i,
                            static_cast<unsigned char>(p[i])));
}

NpyArray ReadOrThrow(const std::string& path, std::optional<DType> expect) {
  Fd f;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. It is
  // refused below, and reads from a regular file never block anyway.
  f.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) Bad(path, fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  if (fstat(f.fd, &st) != 0) Bad(path, fmt::format("cannot stat: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    Bad(path,
        fmt::format("not a regular file (a {})", S_ISDIR(st.st_mode)    ? "directory"
                                                 : S_ISFIFO(st.st_mode) ? "FIFO"
                                                                        : "device or socket"));
  size_t size = static_cast<size_t>(st.st_size);
  // Read the fixed prefix, then the whole header.
  std::string head(std::min<size_t>(size, kMagicLen + 6), '\0');
  head.resize(ReadFully(f.fd, head.data(), head.size()));
  if (head.size() >= kMagicLen + 2 && head.substr(0, kMagicLen) == kMagic) {
    size_t len_bytes = head[6] == 1 ? 2 : 4;
    if (head.size() >= kMagicLen + 2 + len_bytes) {
      size_t total = kMagicLen + 2 + len_bytes + ReadLe(head, kMagicLen + 2, (int)len_bytes);
      size_t want = std::min(total, size);
      size_t had = head.size();
      if (want > had) {
        head.resize(want);
        head.resize(had + ReadFully(f.fd, head.data() + had, want - had));
      }
    }
  }
  NpyHeader h = ParseHeaderOrThrow(head, path);
  Result<DType> dtype = DTypeFromDescr(h.descr, expect, path);
  if (!dtype.ok()) throw NpyError{dtype.status().message()};
  std::optional<size_t> bytes = ByteSize(*dtype, h.shape);
  if (!bytes) Bad(path, fmt::format("shape {} is too large", ShapeText(h.shape)));
  size_t found = size - std::min(size, h.data_offset);
  if (found != *bytes) Bad(path, fmt::format("expected {} bytes of data, found {}", *bytes, found));
  Result<NpyArray> a = NpyArray::Allocate(*dtype, h.shape);
  if (!a.ok()) throw NpyError{a.status().message()};
  if (lseek(f.fd, static_cast<off_t>(h.data_offset), SEEK_SET) < 0 ||
      ReadFully(f.fd, a->data(), *bytes) != *bytes)
    Bad(path, "read failed (was the file changed while reading?)");
  if (*dtype == DType::kBool) CheckBools(*a, path);
  return std::move(a).value();
}

}  // namespace

std::optional<size_t> ByteSize(DType dtype, const std::vector<int64_t>& shape) {
  int64_t n = DTypeBytes(dtype);
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max()) return std::nullopt;
  return static_cast<size_t>(n);
}

Result<NpyArray> NpyArray::Allocate(DType dtype, std::vector<int64_t> shape) {
  std::optional<size_t> bytes = ByteSize(dtype, shape);
  if (!bytes)
    return Status(StatusCode::kInvalid,
                  fmt::format("error: shape {} of {} is negative or too large", ShapeText(shape),
                              DTypeName(dtype)));
  NpyArray a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.nbytes_ = *bytes;
  try {
    a.storage_.assign((*bytes + 7) / 8, 0);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kRuntime,
                  fmt::format("runtime error: out of memory allocating {} bytes", *bytes));
  } catch (const std::length_error&) {
    return Status(StatusCode::kRuntime,
                  fmt::format("runtime error: cannot allocate {} bytes", *bytes));
  }
  return a;
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

Result<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& name) {
  try {
    return ParseHeaderOrThrow(bytes, name);
  } catch (const NpyError& e) {
    return Status(StatusCode::kInvalid, e.message);
  }
}

Result<DType> DTypeFromDescr(const std::string& descr, std::optional<DType> expect,
                             const std::string& name) {
  auto fail = [&](const std::string& what) {
    return Status(StatusCode::kInvalid, fmt::format("error: {}: {}", name, what));
  };
  if (descr.size() >= 2 && descr[0] == '>' && descr.substr(1) != "i1" && descr.substr(1) != "b1")
    return fail(
        fmt::format("big-endian data ('{}') is not supported; save with "
                    "arr.astype(arr.dtype.newbyteorder('<'))",
                    descr));
  if (descr == "<f4") return DType::kF32;
  if (descr == "<f2") return DType::kF16;
  if (descr == "|i1" || descr == "<i1" || descr == ">i1") return DType::kI8;
  if (descr == "<i4") return DType::kI32;
  if (descr == "<i8") return expect == DType::kIndex ? DType::kIndex : DType::kI64;
  if (descr == "|b1" || descr == "<b1" || descr == ">b1") return DType::kBool;
  if (descr == "<u2") {
    if (expect == DType::kBF16) return DType::kBF16;
    return fail("dtype '<u2' (uint16) is read only for bf16 parameters, as raw bf16 bits");
  }
  return fail(
      fmt::format("unsupported dtype '{}' (supported: <f4, <f2, |i1, <i4, <i8, |b1, and "
                  "<u2 holding bf16 bits)",
                  descr));
}

std::string_view DescrFor(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kBF16: return "<u2";
    case DType::kI8: return "|i1";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kIndex: return "<i8";
    case DType::kBool: return "|b1";
  }
  return "?";
}

Result<NpyArray> ReadNpy(const std::string& path, std::optional<DType> expect) {
  try {
    return ReadOrThrow(path, expect);
  } catch (const NpyError& e) {
    return Status(StatusCode::kInvalid, e.message);
  }
}

std::string EncodeNpyHeader(DType dtype, const std::vector<int64_t>& shape) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 DescrFor(dtype), ShapeText(shape));
  // Version 1.0 stores the header length in 2 bytes; longer headers (rank > ~6000) need 2.0.
  size_t prefix = kMagicLen + 4;
  if (prefix + dict.size() + 1 > 65535) prefix = kMagicLen + 6;
  size_t total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(prefix == kMagicLen + 4 ? 1 : 2));
  out.push_back(0);
  size_t len = dict.size();
  for (size_t i = 0; i < prefix - kMagicLen - 2; ++i)
    out.push_back(static_cast<char>(len >> 8 * i));
  return out + dict;
}

Status WriteWholeFile(const std::string& path, std::initializer_list<std::string_view> parts) {
  const char* step = "write";
  if (WriteFile(path, parts, {.replace = true}, &step)) return Status::Ok();
  // Resource problems (a full disk or quota, an I/O error) are runtime errors; the rest (no such
  // folder, no permission, a read-only file system) come from what the user asked for.
  const int err = errno;
  const bool resource = IsResourceErrno(err);
  return Status(resource ? StatusCode::kRuntime : StatusCode::kInvalid,
                fmt::format("{}: cannot write '{}': {}: {}", resource ? "runtime error" : "error",
                            path, step, std::strerror(err)));
}

Status WriteNpy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                const void* data, size_t bytes) {
  std::string header = EncodeNpyHeader(dtype, shape);
  return WriteWholeFile(path, {header, std::string_view(static_cast<const char*>(data), bytes)});
}

}  // namespace ptox::cli
