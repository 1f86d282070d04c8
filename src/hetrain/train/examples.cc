#include "hetrain/train/examples.h"

#include <fmt/format.h>

#include <utility>

#include "hetrain/common/error.h"
#include "hetrain/train/tensors.h"

namespace hetrain::train {
namespace {

constexpr double kByteMax = 255.0;  // uint8 .npy inputs are scaled to [0, 1]

torch::Tensor id_tensor(std::span<const std::uint32_t> ids) {
  return torch::tensor(std::vector<std::int64_t>(ids.begin(), ids.end()), torch::kInt64);
}

// In-memory images (idx, synthetic): views over the split's bytes, gathered
// with index_select exactly as the step always did.
class ImageExamples final : public Examples {
 public:
  ImageExamples(std::shared_ptr<const data::DataSplit> owner, const data::ImageSet& set)
      : owner_(std::move(owner)), t_(as_tensors(set)) {}
  std::size_t size() const override { return static_cast<std::size_t>(t_.labels.size(0)); }
  Batch gather(std::span<const std::uint32_t> ids) const override {
    const auto idx = id_tensor(ids);
    return {normalise(t_.images.index_select(0, idx)), t_.labels.index_select(0, idx)};
  }
  Batch range(std::size_t begin, std::size_t count) const override {
    const auto b = static_cast<std::int64_t>(begin), n = static_cast<std::int64_t>(count);
    return {normalise(t_.images.narrow(0, b, n)), t_.labels.narrow(0, b, n)};
  }

 private:
  std::shared_ptr<const data::DataSplit> owner_;  // keeps the bytes t_ views alive
  Tensors t_;
};

torch::ScalarType torch_type(data::DType t) {
  switch (t) {
    case data::DType::kUInt8: return torch::kUInt8;
    case data::DType::kFloat16: return torch::kFloat16;
    case data::DType::kFloat32: return torch::kFloat32;
    case data::DType::kInt32: return torch::kInt32;
    case data::DType::kInt64: return torch::kInt64;
  }
  return torch::kUInt8;
}

std::vector<std::int64_t> batch_shape(std::size_t rows, const data::NpyArray& a) {
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(rows)};
  for (const std::size_t d : a.row_shape()) shape.push_back(static_cast<std::int64_t>(d));
  return shape;
}

// Memory-mapped .npy rows: each batch copies only its own rows out of the
// mapping, then converts them to what the model and the loss take.
class NpyExamples final : public Examples {
 public:
  explicit NpyExamples(data::NpyTable table) : t_(std::move(table)) {}
  std::size_t size() const override { return t_.x.rows(); }
  Batch gather(std::span<const std::uint32_t> ids) const override {
    auto x = torch::empty(batch_shape(ids.size(), t_.x), torch_type(t_.x.header().dtype));
    auto y = torch::empty(batch_shape(ids.size(), t_.y), torch_type(t_.y.header().dtype));
    t_.x.gather(ids, static_cast<std::uint8_t*>(x.data_ptr()));
    t_.y.gather(ids, static_cast<std::uint8_t*>(y.data_ptr()));
    return convert(std::move(x), std::move(y));
  }
  void will_need(std::span<const std::uint32_t> ids) const override {
    t_.x.will_need(ids);
    t_.y.will_need(ids);
  }
  Batch range(std::size_t begin, std::size_t count) const override {
    auto x = torch::empty(batch_shape(count, t_.x), torch_type(t_.x.header().dtype));
    auto y = torch::empty(batch_shape(count, t_.y), torch_type(t_.y.header().dtype));
    t_.x.copy_rows(begin, count, static_cast<std::uint8_t*>(x.data_ptr()));
    t_.y.copy_rows(begin, count, static_cast<std::uint8_t*>(y.data_ptr()));
    return convert(std::move(x), std::move(y));
  }

 private:
  // uint8 to [0, 1], float16 to float32; class labels to int64.
  static Batch convert(torch::Tensor x, torch::Tensor y) {
    if (x.scalar_type() == torch::kUInt8) {
      x = x.to(torch::kFloat32).div_(kByteMax);
    } else if (x.scalar_type() != torch::kFloat32) {
      x = x.to(torch::kFloat32);
    }
    if (y.scalar_type() == torch::kInt32) y = y.to(torch::kInt64);
    return {std::move(x), std::move(y)};
  }
  data::NpyTable t_;
};

}  // namespace

DataSet::DataSet() = default;
DataSet::~DataSet() = default;
DataSet::DataSet(DataSet&&) noexcept = default;
DataSet& DataSet::operator=(DataSet&&) noexcept = default;
std::size_t DataSet::train_size() const { return train->size(); }

std::vector<std::int64_t> as_shape(const std::vector<std::size_t>& dims) {
  return {dims.begin(), dims.end()};
}

DataSet image_dataset(std::shared_ptr<const data::DataSplit> split, std::string name) {
  DataSet d;
  d.input_shape = {1, static_cast<std::int64_t>(split->train.rows), static_cast<std::int64_t>(split->train.cols)};
  d.class_labels = true;
  d.num_classes = split->train.num_classes;
  d.name = std::move(name);
  const data::ImageSet& train = split->train;
  const data::ImageSet& test = split->test;
  if (test.size() > 0) d.test = std::make_unique<ImageExamples>(split, test);
  d.train = std::make_unique<ImageExamples>(std::move(split), train);
  return d;
}

DataSet npy_dataset(data::NpyData npy, std::string name) {
  DataSet d;
  d.input_shape = as_shape(npy.train.x.row_shape());
  d.target_shape = as_shape(npy.train.y.row_shape());
  d.class_labels = npy.class_labels;
  d.num_classes = npy.num_classes;
  d.name = std::move(name);
  d.train = std::make_unique<NpyExamples>(std::move(npy.train));
  if (npy.test) d.test = std::make_unique<NpyExamples>(std::move(*npy.test));
  return d;
}

}  // namespace hetrain::train
