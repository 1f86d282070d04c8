// Memory-mapped .npy arrays and the train/test tables built from them
// (npy.h). The header parser is npy_header.cc.
#include "hetrain/data/npy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include "hetrain/common/error.h"

namespace hetrain::data {
namespace {

// Labels are scanned in blocks of this many rows, whose pages are released
// after each block: checking a large label file never grows the resident set.
constexpr std::size_t kLabelScanRows = std::size_t{1} << 16;

// An open file descriptor, closed on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::size_t page_size() {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::int64_t label_at(const NpyArray& y, std::size_t i) {
  const std::uint8_t* p = y.row(i);
  if (y.header().dtype == DType::kInt32) {
    std::int32_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  std::int64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The largest label of y; DataError for one outside [0, limit).
std::int64_t scan_labels(const NpyArray& y, std::size_t limit, const std::string& why) {
  std::int64_t most = 0;
  for (std::size_t begin = 0; begin < y.rows(); begin += kLabelScanRows) {
    const std::size_t end = std::min(y.rows(), begin + kLabelScanRows);
    for (std::size_t i = begin; i < end; ++i) {
      const std::int64_t v = label_at(y, i);
      if (v < 0 || static_cast<std::uint64_t>(v) >= limit) {
        throw DataError(fmt::format("{}: label {} at row {} is out of range ({})", y.path(), v, i, why));
      }
      most = std::max(most, v);
    }
    y.release(begin, end - begin);
  }
  return most;
}

bool is_label_dtype(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

void check_input(const NpyArray& x) {
  const DType t = x.header().dtype;
  if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kUInt8) {
    throw DataError(fmt::format("{}: inputs of dtype {} are not supported (float32, float16 or uint8)",
                                x.path(), dtype_name(t)));
  }
}

void check_target(const NpyArray& y) {
  const DType t = y.header().dtype;
  if (!is_label_dtype(t) && t != DType::kFloat32) {
    throw DataError(fmt::format("{}: targets of dtype {} are not supported (int64 or int32 class labels, "
                                "float32 values)",
                                y.path(), dtype_name(t)));
  }
  if (is_label_dtype(t) && y.header().shape.size() != 1) {
    throw DataError(fmt::format("{}: class labels must be one per row, shape (N,), got {}", y.path(),
                                shape_text(y.header().shape)));
  }
}

void check_pair(const NpyTable& t) {
  check_input(t.x);
  check_target(t.y);
  if (t.x.rows() != t.y.rows()) {
    throw DataError(fmt::format("{} has {} rows but {} has {}", t.x.path(), t.x.rows(), t.y.path(), t.y.rows()));
  }
}

// Train and test must look alike row by row: same dtypes, same row shapes.
void check_alike(const NpyArray& train, const NpyArray& test) {
  if (train.header().dtype != test.header().dtype || train.row_shape() != test.row_shape()) {
    const auto a = train.header().shape, b = test.header().shape;
    throw DataError(fmt::format("{} rows are {} {} but {} rows are {} {}", train.path(),
                                dtype_name(train.header().dtype), shape_text(std::span(a).subspan(1)),
                                test.path(), dtype_name(test.header().dtype),
                                shape_text(std::span(b).subspan(1))));
  }
}

}  // namespace

NpyArray::NpyArray(const std::string& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw DataError(path + ": is a directory, not a .npy file");
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw DataError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw DataError(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) throw DataError(fmt::format("{}: empty file, not a .npy file", path));
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) throw DataError(fmt::format("{}: cannot map: {}", path, std::strerror(errno)));
  base_ = static_cast<const std::uint8_t*>(p);
  // Rows are read in a shuffled order: read-ahead would only fill memory.
  ::madvise(p, size_, MADV_RANDOM);
  try {
    header_ = parse_npy_header(std::span(base_, size_), path);
    const std::size_t data = size_ - header_.data_offset;
    const std::size_t expected = header_.rows() * header_.row_bytes();
    if (data != expected) {
      throw DataError(fmt::format("{}: {}: the header's shape {} of {} needs {} data bytes, the file has {}", path,
                                  data < expected ? "truncated" : "header does not match the data",
                                  shape_text(header_.shape), dtype_name(header_.dtype), expected, data));
    }
    if (header_.rows() == 0) throw DataError(fmt::format("{}: no rows (shape {})", path, shape_text(header_.shape)));
    if (header_.row_bytes() == 0) {
      throw DataError(fmt::format("{}: rows of zero size (shape {})", path, shape_text(header_.shape)));
    }
    // Sample ids are 32-bit (data/cursor.h).
    if (header_.rows() > std::numeric_limits<std::uint32_t>::max()) {
      throw DataError(fmt::format("{}: {} rows, more than the {} a data set may have", path, header_.rows(),
                                  std::numeric_limits<std::uint32_t>::max()));
    }
  } catch (...) {
    ::munmap(p, size_);
    throw;
  }
}

NpyArray::~NpyArray() {
  if (base_ != nullptr) ::munmap(const_cast<std::uint8_t*>(base_), size_);
}

NpyArray::NpyArray(NpyArray&& o) noexcept
    : path_(std::move(o.path_)),
      header_(std::move(o.header_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

NpyArray& NpyArray::operator=(NpyArray&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(const_cast<std::uint8_t*>(base_), size_);
    path_ = std::move(o.path_);
    header_ = std::move(o.header_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

std::vector<std::size_t> NpyArray::row_shape() const {
  return {header_.shape.begin() + 1, header_.shape.end()};
}

const std::uint8_t* NpyArray::row(std::size_t i) const {
  HETRAIN_ENFORCE_LT(i, rows());
  return base_ + header_.data_offset + i * row_bytes();
}

void NpyArray::gather(std::span<const std::uint32_t> ids, std::uint8_t* dst) const {
  const std::size_t rb = row_bytes();
  // Ask for every row's pages first: the kernel reads them all at once
  // instead of one page fault at a time, which on a disk is the difference
  // between one seek's latency per batch and one per row.
  will_need(ids);
  for (const std::uint32_t id : ids) {
    std::memcpy(dst, row(id), rb);
    release(id, 1);  // read once an epoch: keep the resident set to what is being read
    dst += rb;
  }
}

void NpyArray::will_need(std::span<const std::uint32_t> ids) const {
  for (const std::uint32_t id : ids) advise(id, 1, MADV_WILLNEED);
}

void NpyArray::copy_rows(std::size_t begin, std::size_t count, std::uint8_t* dst) const {
  if (count == 0) return;
  HETRAIN_ENFORCE_LE(begin + count, rows());
  std::memcpy(dst, row(begin), count * row_bytes());
  release(begin, count);
}

void NpyArray::release(std::size_t begin, std::size_t count) const {
  // Rounded out to whole pages: safe even where a neighbouring row is being
  // read by another thread, because the mapping is read-only and file-backed,
  // so a dropped page simply faults back in from the page cache.
  advise(begin, count, MADV_DONTNEED);
}

void NpyArray::advise(std::size_t begin, std::size_t count, int advice) const {
  if (count == 0) return;
  HETRAIN_ENFORCE_LE(begin + count, rows());
  // Offsets from the mapping's start, which mmap aligned to a page.
  const std::size_t page = page_size();
  const std::size_t first = header_.data_offset + begin * row_bytes(), last = first + count * row_bytes();
  const std::size_t from = first / page * page, to = (last + page - 1) / page * page;
  ::madvise(const_cast<std::uint8_t*>(base_) + from, to - from, advice);
}

bool is_npy_path(const std::string& path) { return path.size() > 4 && path.ends_with(".npy"); }

bool is_npy_dir(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / kNpyTrainX, ec);
}

NpyData open_npy(const std::string& train_x, const std::string& train_y, const std::string& test_x,
                 const std::string& test_y) {
  NpyData d{NpyTable{NpyArray(train_x), NpyArray(train_y)}, nullptr};
  check_pair(d.train);
  if (!test_x.empty() || !test_y.empty()) {
    d.test = std::make_unique<NpyTable>(NpyTable{NpyArray(test_x), NpyArray(test_y)});
    check_pair(*d.test);
    check_alike(d.train.x, d.test->x);
    check_alike(d.train.y, d.test->y);
  }
  d.class_labels = is_label_dtype(d.train.y.header().dtype);
  if (d.class_labels) {
    const std::string limit = fmt::format("labels must be in [0, {})", kMaxNpyClasses);
    d.num_classes = static_cast<std::size_t>(scan_labels(d.train.y, kMaxNpyClasses, limit)) + 1;
    if (d.test) {
      scan_labels(d.test->y, d.num_classes,
                  fmt::format("the training labels have {} classes, 0..{}", d.num_classes, d.num_classes - 1));
    }
  }
  return d;
}

NpyData open_npy_dir(const std::string& dir) {
  const std::filesystem::path base(dir);
  auto file = [&](const char* name) { return (base / name).string(); };
  std::error_code ec;
  const bool has_x = std::filesystem::exists(file(kNpyTestX), ec);
  const bool has_y = std::filesystem::exists(file(kNpyTestY), ec);
  if (has_x != has_y) {
    throw DataError(fmt::format("{}: has {} but not {} (give both test files or neither)", dir,
                                has_x ? kNpyTestX : kNpyTestY, has_x ? kNpyTestY : kNpyTestX));
  }
  return has_x ? open_npy(file(kNpyTrainX), file(kNpyTrainY), file(kNpyTestX), file(kNpyTestY))
               : open_npy(file(kNpyTrainX), file(kNpyTrainY));
}

}  // namespace hetrain::data
