// NumPy .npy files for `ptox run --inputs/--outputs`: reading (format 1.0, 2.0, 3.0) and writing
// (1.0, or 2.0 when the header needs it), C order, little-endian, with every field validated.
//
// dtypes: '<f4' f32, '<f2' f16, '|i1' (or '<i1') i8, '<i4' i32, '<i8' i64, '|b1' bool.
// numpy has no bf16 and no index type: bf16 is stored as '<u2' (the raw bf16 bits) and index as
// '<i8'; a '<u2' / '<i8' file reads as bf16 / index when the caller expects that dtype.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptox/dtype.h"
#include "ptox/status.h"
#include "ptox/tensor.h"

namespace ptox::cli {

// An owning, contiguous (C order) array. The storage is 8-byte aligned, enough for every dtype.
class NpyArray {
 public:
  // A zero-filled array; kInvalid for a negative dim or a byte size that overflows, kRuntime when
  // memory runs out.
  static Result<NpyArray> Allocate(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  size_t nbytes() const { return nbytes_; }
  char* data() { return reinterpret_cast<char*>(storage_.data()); }
  const char* data() const { return reinterpret_cast<const char*>(storage_.data()); }
  // A view for ptox::Run; the array must outlive it.
  Tensor view() { return Tensor::Contiguous(data(), dtype_, shape_); }

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  std::vector<uint64_t> storage_;
  size_t nbytes_ = 0;
};

// The parsed header of a .npy file.
struct NpyHeader {
  int major_version = 1;
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes before the array data
};

// Parses the header at the start of `bytes` (the file's first bytes; more is fine). `name` is
// used in messages. kInvalid with "error: <name>: ..." for anything malformed.
Result<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& name);

// The dtype for a descr such as "<f4". `expect` (the parameter's dtype) selects bf16 for '<u2'
// and index for '<i8'. kInvalid naming `name` for descrs ptox cannot read.
Result<DType> DTypeFromDescr(const std::string& descr, std::optional<DType> expect,
                             const std::string& name);
// The descr ptox writes for a dtype ('<u2' for bf16, '<i8' for index).
std::string_view DescrFor(DType dtype);

// Reads a whole .npy file. Never crashes on malformed input: every problem is a kInvalid status.
Result<NpyArray> ReadNpy(const std::string& path, std::optional<DType> expect = std::nullopt);

// The header (magic, version, length, dict, padding to 64 bytes) for a C-order array.
std::string EncodeNpyHeader(DType dtype, const std::vector<int64_t>& shape);
// Writes `parts` in order to `path` (created, or truncated when it exists); on failure removes
// the partial file. A full disk or quota (ENOSPC, EDQUOT, EFBIG) or an I/O error is kRuntime,
// anything else (no such folder, no permission) kInvalid; both messages name the path.
Status WriteWholeFile(const std::string& path, std::initializer_list<std::string_view> parts);
// Writes `bytes` bytes at `data` as a .npy file (replacing an existing file), as WriteWholeFile.
Status WriteNpy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                const void* data, size_t bytes);
inline Status WriteNpy(const std::string& path, const NpyArray& a) {
  return WriteNpy(path, a.dtype(), a.shape(), a.data(), a.nbytes());
}

// The byte size of `shape` x `dtype`, or nullopt for a negative dim or an overflow.
std::optional<size_t> ByteSize(DType dtype, const std::vector<int64_t>& shape);

}  // namespace ptox::cli
