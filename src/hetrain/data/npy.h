// NumPy .npy arrays, memory-mapped: the header parsed here (no Debian
// package parses .npy for C++ without reading the whole file: xtensor's
// load_npy copies it into memory), the data left on disk and read row by
// row, so a data set larger than memory trains with each worker touching
// only the rows of its own slices.
//
// Format (numpy.lib.format, versions 1.0 to 3.0): the magic "\x93NUMPY",
// major and minor version bytes, the header's length (little-endian u16 in
// 1.0, u32 in 2.0 and 3.0), then the header: a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1000, 28, 28), }
// padded with spaces to a multiple of 64 bytes and ended by '\n'. The
// C-order data follows: shape[0] rows of prod(shape[1:]) items each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hetrain::data {

// The element types hetrain reads: inputs are float32, float16 or uint8;
// targets are int64 or int32 class labels, or float32 values.
enum class DType { kUInt8, kFloat16, kFloat32, kInt32, kInt64 };
std::size_t dtype_bytes(DType t);
const char* dtype_name(DType t);  // "uint8", "float16", ...

struct NpyHeader {
  DType dtype = DType::kUInt8;
  std::vector<std::size_t> shape;  // shape[0]: rows
  std::size_t data_offset = 0;     // bytes from the start of the file to the data
  std::size_t rows() const { return shape.empty() ? 0 : shape[0]; }
  std::size_t row_items() const;   // prod(shape[1:])
  std::size_t row_bytes() const { return row_items() * dtype_bytes(dtype); }
};

// The header's text may not be longer than this (numpy itself refuses more
// than 10,000 bytes without allow_pickle-like overrides; 1 MiB is generous).
inline constexpr std::size_t kMaxNpyHeaderBytes = std::size_t{1} << 20;
// More dimensions than this is a corrupt header, not a data set.
inline constexpr std::size_t kMaxNpyDims = 32;

// Parses the magic, version and header at the start of `bytes` (the whole
// file or at least its header); `path` names the file in errors. Throws
// DataError for a wrong magic, an unknown version, a header cut short or
// malformed, Fortran order, an unsupported or big-endian dtype, a 0-d
// array, or a shape whose byte size overflows 64 bits.
NpyHeader parse_npy_header(std::span<const std::uint8_t> bytes, const std::string& path);

// "(1000, 28, 28)", as numpy prints shapes.
std::string shape_text(std::span<const std::size_t> shape);

// A read-only memory map of one .npy file whose size the header accounts
// for exactly. Rows are read on demand: the kernel pages in only what is
// touched, and pages it dropped are read again when needed.
class NpyArray {
 public:
  // Throws DataError: missing or unreadable file, a bad header (above), a
  // file shorter ("truncated") or longer (the header lies about its shape)
  // than the header says, or no rows.
  explicit NpyArray(const std::string& path);
  ~NpyArray();
  NpyArray(NpyArray&&) noexcept;
  NpyArray& operator=(NpyArray&&) noexcept;
  NpyArray(const NpyArray&) = delete;
  NpyArray& operator=(const NpyArray&) = delete;

  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return header_; }
  std::size_t rows() const { return header_.rows(); }
  std::size_t row_bytes() const { return header_.row_bytes(); }
  // The per-row shape, shape[1:].
  std::vector<std::size_t> row_shape() const;
  // Row i's bytes (i < rows()).
  const std::uint8_t* row(std::size_t i) const;
  // Copies rows ids[0], ids[1], ... to dst, one after another
  // (dst holds ids.size() x row_bytes()), asking the kernel for all their
  // pages before the first copy and releasing each row's pages after it
  // (rows are read once an epoch). Throws Error for an id >= rows().
  void gather(std::span<const std::uint32_t> ids, std::uint8_t* dst) const;
  // Asks the kernel to start reading these rows' pages, without waiting:
  // a later gather() of them then finds them in memory.
  void will_need(std::span<const std::uint32_t> ids) const;
  // Copies rows [begin, begin + count) to dst, then releases their pages.
  void copy_rows(std::size_t begin, std::size_t count, std::uint8_t* dst) const;
  // Tells the kernel this process no longer needs the pages of rows
  // [begin, begin + count): they leave its resident set (the page cache may
  // keep them), so a worker's memory stays bounded by what it reads next.
  void release(std::size_t begin, std::size_t count) const;

 private:
  // madvise(advice) over the whole pages holding rows [begin, begin + count).
  void advise(std::size_t begin, std::size_t count, int advice) const;

  std::string path_;
  NpyHeader header_;
  const std::uint8_t* base_ = nullptr;  // the mapping
  std::size_t size_ = 0;                // bytes mapped (the file's size)
};

// Inputs and targets for training (and, optionally, testing) from .npy files.
struct NpyTable {
  NpyArray x, y;
};
struct NpyData {
  NpyTable train;
  std::unique_ptr<NpyTable> test;  // null: no test files
  bool class_labels = false;       // targets are int32/int64 class labels
  std::size_t num_classes = 0;     // class_labels only: max train label + 1
};

// The file names --data DIR looks for.
inline constexpr const char* kNpyTrainX = "train_x.npy";
inline constexpr const char* kNpyTrainY = "train_y.npy";
inline constexpr const char* kNpyTestX = "test_x.npy";
inline constexpr const char* kNpyTestY = "test_y.npy";

// Class labels above this are a corrupt file, not a classifier's output
// layer (the model would have this many outputs).
inline constexpr std::size_t kMaxNpyClasses = std::size_t{1} << 16;

// True when dir holds train_x.npy (then it is read as .npy, not idx).
bool is_npy_dir(const std::string& dir);
// True when a path names a .npy file.
bool is_npy_path(const std::string& path);

// Opens and checks the files: inputs of float32/float16/uint8, targets of
// int32/int64 (class labels) or float32, the same rows in x and y, the same
// row shapes in train and test, labels in [0, kMaxNpyClasses) and test
// labels below the train labels' class count. test_x/test_y empty: no test
// set. Scanning the labels reads the (small) target files once; the inputs
// stay untouched. Throws DataError naming the file and the problem.
NpyData open_npy(const std::string& train_x, const std::string& train_y, const std::string& test_x = "",
                 const std::string& test_y = "");
// --data DIR: train_x.npy, train_y.npy and, if both are there, test_x.npy, test_y.npy.
NpyData open_npy_dir(const std::string& dir);

}  // namespace hetrain::data
