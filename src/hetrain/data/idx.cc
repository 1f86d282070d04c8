#include "hetrain/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <type_traits>

#include "hetrain/common/error.h"

namespace hetrain::data {
namespace {

// Read granularity: data arrives in chunks so memory only grows as far as
// the file really goes, whatever its header claims (1 MiB).
constexpr std::size_t kReadChunkBytes = std::size_t{1} << 20;
// zlib's internal input buffer; larger than its 8 KiB default to cut syscalls.
constexpr unsigned kGzBufferBytes = 1u << 17;
constexpr std::size_t kHeaderFieldBytes = 4;   // every idx header field is a u32
constexpr std::size_t kMaxLabelClasses = 256;  // labels are stored as bytes
// How far past the end we look to report how many trailing bytes there are.
constexpr std::size_t kTrailingProbeBytes = 4096;

struct GzCloser {
  void operator()(gzFile f) const noexcept { gzclose(f); }
};
using GzPtr = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(v));
  return buf;
}

// An open idx file that remembers its path for error messages.
class IdxReader {
 public:
  explicit IdxReader(const std::string& path) : path_(path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail("is a directory, not an idx file");
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) {
      const int err = errno;
      fail(std::string("cannot open: ") + (err != 0 ? std::strerror(err) : "zlib out of memory"));
    }
    gzbuffer(file_.get(), kGzBufferBytes);
  }

  [[noreturn]] void fail(const std::string& problem) const { throw DataError(path_ + ": " + problem); }

  // Reads up to n bytes into dst; returns how many arrived (< n only at end).
  std::size_t read_some(std::uint8_t* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const auto want = static_cast<unsigned>(std::min(n - got, kReadChunkBytes));
      const int r = gzread(file_.get(), dst + got, want);
      if (r < 0) fail("read error: " + zlib_message());
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

  std::uint32_t read_u32_be(const char* field) {
    std::uint8_t b[kHeaderFieldBytes];
    const std::size_t got = read_some(b, sizeof b);
    if (got != sizeof b) {
      fail("truncated header: got " + std::to_string(got) + " of " + std::to_string(sizeof b) + " bytes of " +
           field + zlib_suffix());
    }
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  }

  void expect_magic(std::uint32_t expected, const char* kind) {
    const std::uint32_t magic = read_u32_be("magic");
    if (magic != expected) {
      fail("wrong magic " + hex32(magic) + " (expected " + hex32(expected) + " for " + kind + ")");
    }
  }

  std::uint32_t read_dim(const char* name) {
    const std::uint32_t v = read_u32_be(name);
    if (v == 0) fail(std::string("zero dimension in header: ") + name + " = 0");
    return v;
  }

  // Reads exactly total bytes, growing out only as data really arrives.
  std::vector<std::uint8_t> read_payload(std::size_t total, const std::string& what) {
    std::vector<std::uint8_t> out;
    while (out.size() < total) {
      const std::size_t have = out.size();
      const std::size_t step = std::min(total - have, kReadChunkBytes);
      out.resize(have + step);
      const std::size_t got = read_some(out.data() + have, step);
      if (got < step) {
        fail("truncated " + what + ": got " + std::to_string(have + got) + " of " + std::to_string(total) +
             " bytes" + zlib_suffix());
      }
    }
    return out;
  }

  // idx has no framing beyond the header, so extra bytes mean a corrupt or
  // mismatched file; refuse it rather than silently dropping data.
  void expect_end(const std::string& what) {
    std::uint8_t probe[kTrailingProbeBytes];
    const std::size_t extra = read_some(probe, sizeof probe);
    if (extra != 0) {
      fail("trailing bytes after " + what + " (" + std::to_string(extra) +
           (extra == sizeof probe ? " or more" : "") + " extra bytes)");
    }
  }

 private:
  std::string zlib_message() {
    int errnum = Z_OK;
    const char* msg = gzerror(file_.get(), &errnum);
    if (errnum == Z_ERRNO) return std::strerror(errno);
    std::string text = msg != nullptr && *msg != '\0' ? msg : "unknown zlib error";
    // zlib prefixes its messages with the path, which ours already carry.
    const std::string prefix = path_ + ": ";
    if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
    return text;
  }
  // " (zlib: ...)" when zlib flagged a problem such as a cut-off gzip stream.
  std::string zlib_suffix() {
    int errnum = Z_OK;
    gzerror(file_.get(), &errnum);
    return errnum == Z_OK ? "" : " (zlib: " + zlib_message() + ")";
  }

  std::string path_;
  GzPtr file_;
};

}  // namespace

ImageSet read_idx_pair(const std::string& images_path, const std::string& labels_path,
                       std::size_t num_classes) {
  if (num_classes == 0 || num_classes > kMaxLabelClasses) {
    throw UsageError("num_classes must be in 1.." + std::to_string(kMaxLabelClasses) + ", got " +
                     std::to_string(num_classes));
  }
  IdxReader images(images_path);
  images.expect_magic(kIdxImagesMagic, "idx3 ubyte images");
  const std::uint64_t n = images.read_dim("n");
  const std::uint64_t rows = images.read_dim("rows");
  const std::uint64_t cols = images.read_dim("cols");
  // Each factor is < 2^32, so rows * cols cannot overflow 64 bits; dividing
  // instead of multiplying by n keeps the bound check overflow-free.
  const std::uint64_t image_bytes = rows * cols;
  if (image_bytes > kMaxIdxPixelBytes || n > kMaxIdxPixelBytes / image_bytes) {
    images.fail("header claims " + std::to_string(n) + " images of " + std::to_string(rows) + "x" +
                std::to_string(cols) + ", more than the limit of " + std::to_string(kMaxIdxPixelBytes) +
                " pixel bytes");
  }

  IdxReader labels(labels_path);
  labels.expect_magic(kIdxLabelsMagic, "idx1 ubyte labels");
  const std::uint64_t label_n = labels.read_dim("n");
  if (label_n != n) {
    throw DataError(images_path + " and " + labels_path + ": count mismatch: " + std::to_string(n) +
                    " images but " + std::to_string(label_n) + " labels");
  }

  ImageSet set;
  set.rows = static_cast<std::size_t>(rows);
  set.cols = static_cast<std::size_t>(cols);
  set.num_classes = num_classes;
  set.pixels = images.read_payload(static_cast<std::size_t>(n * image_bytes), "image data");
  images.expect_end(std::to_string(n) + " images");
  set.labels = labels.read_payload(static_cast<std::size_t>(n), "label data");
  labels.expect_end(std::to_string(n) + " labels");

  for (std::size_t i = 0; i < set.labels.size(); ++i) {
    if (set.labels[i] >= num_classes) {
      labels.fail("label " + std::to_string(set.labels[i]) + " at index " + std::to_string(i) +
                  " is out of range (num_classes = " + std::to_string(num_classes) + ")");
    }
  }
  return set;
}

DataSplit load_mnist_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw DataError(dir +
                    ": dataset directory not found (for Fashion-MNIST, run scripts/setup.sh "
                    "to install dataset-fashion-mnist)");
  }
  const std::filesystem::path base(dir);
  auto file = [&](const char* name) { return (base / name).string(); };
  DataSplit split;
  split.train = read_idx_pair(file("train-images-idx3-ubyte.gz"), file("train-labels-idx1-ubyte.gz"));
  split.test = read_idx_pair(file("t10k-images-idx3-ubyte.gz"), file("t10k-labels-idx1-ubyte.gz"));
  if (split.train.rows != split.test.rows || split.train.cols != split.test.cols) {
    throw DataError(dir + ": train images are " + std::to_string(split.train.rows) + "x" +
                    std::to_string(split.train.cols) + " but test images are " +
                    std::to_string(split.test.rows) + "x" + std::to_string(split.test.cols));
  }
  return split;
}

}  // namespace hetrain::data
