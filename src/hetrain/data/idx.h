// In-memory image classification sets and a reader for the MNIST "idx"
// file format (gzip-compressed or plain). Torch-free on purpose: the data
// layer is tested and used without pulling in libtorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hetrain::data {

// A set of single-channel 8-bit images with one class label each.
struct ImageSet {
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // size() * rows * cols, row-major, sample-major
  std::vector<std::uint8_t> labels;  // one per sample
  std::size_t num_classes = 10;
  std::size_t size() const { return labels.size(); }
};

struct DataSplit {
  ImageSet train, test;
};

// idx magic numbers: 0x0000, type code 0x08 (unsigned byte), number of dims.
inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // idx3 ubyte: n, rows, cols
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // idx1 ubyte: n

// Upper bound on pixels one image file may claim, so that a corrupt or
// hostile header cannot make us allocate without limit (1 GiB of pixels).
inline constexpr std::size_t kMaxIdxPixelBytes = std::size_t{1} << 30;

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reads an images/labels idx pair (big-endian u32 header fields).
// Throws DataError for a missing/unreadable file, wrong magic, zero dims,
// a header beyond kMaxIdxPixelBytes, truncated data, trailing bytes,
// image/label count mismatch or a label >= num_classes.
// Throws UsageError if num_classes is 0 or above 256 (labels are bytes).
ImageSet read_idx_pair(const std::string& images_path, const std::string& labels_path,
                       std::size_t num_classes = 10);

// Loads dir/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz as train/test.
// Throws DataError if dir does not exist or any file is bad.
DataSplit load_mnist_dir(const std::string& dir);

}  // namespace hetrain::data
