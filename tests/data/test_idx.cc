#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>  // mkdtemp (POSIX)
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "hetrain/common/error.h"
#include "hetrain/data/idx.h"

namespace hetrain::data {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hetrain_test_idx_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// An idx file: magic and dims as big-endian u32, then the payload as given.
Bytes idx(std::initializer_list<std::uint32_t> header, const Bytes& payload) {
  Bytes out;
  for (std::uint32_t v : header) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}
Bytes idx_images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels,
                 std::uint32_t magic = kIdxImagesMagic) {
  return idx({magic, n, rows, cols}, pixels);
}
Bytes idx_labels(std::uint32_t n, const Bytes& labels, std::uint32_t magic = kIdxLabelsMagic) {
  return idx({magic, n}, labels);
}

void write_gzip(const std::string& path, const Bytes& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!data.empty()) {
    ASSERT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

void write_plain(const std::string& path, const Bytes& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(f.good()) << path;
}

// Runs f, expects a DataError and returns its message (one line, checked).
template <typename F>
std::string data_error_message(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
    EXPECT_EQ(e.code(), ExitCode::kData);
    return msg;
  }
  ADD_FAILURE() << "expected a DataError";  // other exceptions propagate and fail the test
  return "";
}

// Three 2x4 images with known pixels and labels, used by most tests.
class IdxTest : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kN = 3, kRows = 2, kCols = 4;
  const Bytes pixels_ = {0,  1,  2,  3,  4,   5,   6,   7,   10,  20,  30, 40,
                         50, 60, 70, 80, 255, 254, 253, 252, 128, 127, 1,  0};
  const Bytes labels_ = {0, 9, 5};
  TempDir dir_;
  const std::string images_ = dir_.file("imgs-idx3-ubyte.gz");
  const std::string labels_path_ = dir_.file("lbls-idx1-ubyte.gz");

  Bytes good_images() const { return idx_images(kN, kRows, kCols, pixels_); }
  Bytes good_labels() const { return idx_labels(kN, labels_); }
  void write_pair(const Bytes& images, const Bytes& labels) {
    write_gzip(images_, images);
    write_gzip(labels_path_, labels);
  }
  std::string error_reading() {
    return data_error_message([&] { read_idx_pair(images_, labels_path_); });
  }
  // Writes the pair, expects a DataError naming `file` and containing `what`.
  void expect_error(const Bytes& images, const Bytes& labels, const std::string& file,
                    const std::string& what) {
    write_pair(images, labels);
    const std::string msg = error_reading();
    EXPECT_NE(msg.find(file), std::string::npos) << "no file name in: " << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "no '" << what << "' in: " << msg;
  }
};

TEST_F(IdxTest, ReadsGzipPairExactly) {
  write_pair(good_images(), good_labels());
  const ImageSet set = read_idx_pair(images_, labels_path_);
  EXPECT_EQ(set.size(), kN);
  EXPECT_EQ(set.rows, kRows);
  EXPECT_EQ(set.cols, kCols);
  EXPECT_EQ(set.num_classes, 10u);
  EXPECT_EQ(set.pixels, pixels_);
  EXPECT_EQ(set.labels, labels_);
}

TEST_F(IdxTest, ReadsPlainUncompressedPairExactly) {
  const std::string images = dir_.file("plain-images"), labels = dir_.file("plain-labels");
  write_plain(images, good_images());
  write_plain(labels, good_labels());
  const ImageSet set = read_idx_pair(images, labels, 12);
  EXPECT_EQ(set.num_classes, 12u);
  EXPECT_EQ(set.pixels, pixels_);
  EXPECT_EQ(set.labels, labels_);
}

TEST_F(IdxTest, ReadsDataLargerThanOneReadChunk) {
  // 3 MiB of pixels crosses the reader's 1 MiB chunk boundary several times.
  const std::uint32_t n = 3 * 1024, rows = 32, cols = 32;
  Bytes pixels(std::size_t{n} * rows * cols), labels(n);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>(i % 10);
  write_pair(idx_images(n, rows, cols, pixels), idx_labels(n, labels));
  const ImageSet set = read_idx_pair(images_, labels_path_);
  EXPECT_EQ(set.pixels, pixels);
  EXPECT_EQ(set.labels, labels);
}

TEST_F(IdxTest, MissingFiles) {
  write_gzip(labels_path_, good_labels());
  std::string msg = error_reading();
  EXPECT_NE(msg.find(images_ + ": cannot open"), std::string::npos) << msg;

  fs::remove(labels_path_);
  write_gzip(images_, good_images());
  msg = error_reading();
  EXPECT_NE(msg.find(labels_path_ + ": cannot open"), std::string::npos) << msg;

  msg = data_error_message([&] { read_idx_pair(dir_.path().string(), labels_path_); });
  EXPECT_NE(msg.find(dir_.path().string()), std::string::npos) << msg;
}

TEST_F(IdxTest, WrongMagic) {
  expect_error(idx_images(kN, kRows, kCols, pixels_, kIdxLabelsMagic), good_labels(), images_,
               ": wrong magic 0x00000801 (expected 0x00000803 for idx3 ubyte images)");
  expect_error(good_images(), idx_labels(kN, labels_, 0), labels_path_,
               ": wrong magic 0x00000000 (expected 0x00000801 for idx1 ubyte labels)");
}

TEST_F(IdxTest, EmptyFileIsTruncatedHeader) {
  expect_error({}, good_labels(), images_, "truncated header: got 0 of 4 bytes of magic");
}

TEST_F(IdxTest, TruncatedImages) {
  const Bytes short_pixels(pixels_.begin(), pixels_.end() - 1);
  expect_error(idx_images(kN, kRows, kCols, short_pixels), good_labels(), images_,
               "truncated image data: got 23 of 24 bytes");
}

TEST_F(IdxTest, TruncatedLabels) {
  expect_error(good_images(), idx_labels(kN, {0, 9}), labels_path_, "truncated label data: got 2 of 3 bytes");
}

TEST_F(IdxTest, CutOffGzipStream) {
  // A download cut short: the compressed file itself ends early.
  write_pair(good_images(), good_labels());
  fs::resize_file(images_, fs::file_size(images_) - 12);
  const std::string msg = error_reading();
  EXPECT_NE(msg.find(images_ + ": truncated"), std::string::npos) << msg;
}

TEST_F(IdxTest, CountMismatch) {
  expect_error(good_images(), idx_labels(2, {0, 9}), labels_path_, "count mismatch: 3 images but 2 labels");
  EXPECT_NE(error_reading().find(images_), std::string::npos);
}

TEST_F(IdxTest, LabelOutOfRange) {
  expect_error(good_images(), idx_labels(kN, {0, 10, 5}), labels_path_, "label 10 at index 1");
}

TEST_F(IdxTest, LabelRangeFollowsNumClasses) {
  write_pair(good_images(), good_labels());  // labels 0, 9, 5
  EXPECT_NO_THROW(read_idx_pair(images_, labels_path_, 10));
  const std::string msg = data_error_message([&] { read_idx_pair(images_, labels_path_, 9); });
  EXPECT_NE(msg.find("label 9 at index 1"), std::string::npos) << msg;
  EXPECT_THROW(read_idx_pair(images_, labels_path_, 0), UsageError);
  EXPECT_THROW(read_idx_pair(images_, labels_path_, 257), UsageError);
}

TEST_F(IdxTest, TrailingBytesInImages) {
  Bytes extra = pixels_;
  extra.insert(extra.end(), {42, 43});
  expect_error(idx_images(kN, kRows, kCols, extra), good_labels(), images_,
               "trailing bytes after 3 images (2 extra bytes)");
}

TEST_F(IdxTest, TrailingBytesInLabels) {
  expect_error(good_images(), idx_labels(kN, {0, 9, 5, 1}), labels_path_, "trailing bytes");
}

TEST_F(IdxTest, ZeroDimensions) {
  for (const auto& [n, rows, cols, name] :
       {std::tuple{0u, kRows, kCols, "n"}, std::tuple{kN, 0u, kCols, "rows"},
        std::tuple{kN, kRows, 0u, "cols"}}) {
    expect_error(idx_images(n, rows, cols, pixels_), good_labels(), images_,
                 std::string("zero dimension in header: ") + name);
  }
}

TEST_F(IdxTest, HugeCountWithLittleDataIsTruncatedNotBadAlloc) {
  // ~784 MB claimed (under the cap), 24 bytes present: must stop at the data.
  const std::uint32_t n = 1000000;
  expect_error(idx_images(n, 28, 28, pixels_), idx_labels(n, labels_), images_,
               "truncated image data: got 24 of 784000000 bytes");
}

TEST_F(IdxTest, AbsurdHeaderIsRejectedBeforeAllocating) {
  const std::uint32_t max = 0xFFFFFFFFu;
  expect_error(idx_images(max, max, max, pixels_), good_labels(), images_, "more than the limit");
  expect_error(idx_images(max, 28, 28, pixels_), good_labels(), images_, "more than the limit");
}

TEST(LoadMnistDir, ReadsTheFourStandardFilesAndNamesAMissingOne) {
  TempDir dir;
  const Bytes train_px = {1, 2, 3, 4, 5, 6, 7, 8}, test_px = {9, 8, 7, 6};
  write_gzip(dir.file("train-images-idx3-ubyte.gz"), idx_images(2, 2, 2, train_px));
  write_gzip(dir.file("train-labels-idx1-ubyte.gz"), idx_labels(2, {3, 4}));
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), idx_images(1, 2, 2, test_px));
  write_gzip(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels(1, {7}));
  const DataSplit split = load_mnist_dir(dir.path().string());
  EXPECT_EQ(split.train.pixels, train_px);
  EXPECT_EQ(split.train.labels, (Bytes{3, 4}));
  EXPECT_EQ(split.test.pixels, test_px);
  EXPECT_EQ(split.test.labels, (Bytes{7}));

  fs::remove(dir.file("t10k-labels-idx1-ubyte.gz"));
  const std::string msg = data_error_message([&] { load_mnist_dir(dir.path().string()); });
  EXPECT_NE(msg.find(dir.file("t10k-labels-idx1-ubyte.gz")), std::string::npos) << msg;
}

TEST(LoadMnistDir, MissingDirectorySaysHowToInstall) {
  const std::string missing = (fs::temp_directory_path() / "hetrain_no_such_dataset_dir").string();
  const std::string msg = data_error_message([&] { load_mnist_dir(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("scripts/setup.sh"), std::string::npos) << msg;
}

TEST(FashionMnist, InstalledDatasetHasExpectedShape) {
  ASSERT_TRUE(fs::is_directory(kFashionMnistDir))
      << kFashionMnistDir << " is missing: run scripts/setup.sh (installs dataset-fashion-mnist)";
  const DataSplit split = load_mnist_dir(kFashionMnistDir);
  EXPECT_EQ(split.train.size(), 60000u);
  EXPECT_EQ(split.test.size(), 10000u);
  for (const ImageSet* set : {&split.train, &split.test}) {
    EXPECT_EQ(set->rows, 28u);
    EXPECT_EQ(set->cols, 28u);
    EXPECT_EQ(set->pixels.size(), set->size() * 28 * 28);
    std::vector<std::size_t> per_class(10);
    for (std::uint8_t label : set->labels) {
      ASSERT_LT(label, 10);
      ++per_class[label];
    }
    // Fashion-MNIST is balanced: every class appears exactly size / 10 times.
    for (std::size_t c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], set->size() / 10) << "class " << c;
  }
}

}  // namespace
}  // namespace hetrain::data
