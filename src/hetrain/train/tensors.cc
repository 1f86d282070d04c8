#include "hetrain/train/tensors.h"

namespace hetrain::train {
namespace {
// Fashion-MNIST pixel statistics after scaling to [0, 1].
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;
constexpr double kPixelMax = 255.0;
}  // namespace

Tensors as_tensors(const data::ImageSet& s) {
  auto images = torch::from_blob(const_cast<std::uint8_t*>(s.pixels.data()),
                                 {static_cast<std::int64_t>(s.size()), 1, static_cast<std::int64_t>(s.rows),
                                  static_cast<std::int64_t>(s.cols)},
                                 torch::kUInt8);
  auto labels = torch::from_blob(const_cast<std::uint8_t*>(s.labels.data()),
                                 {static_cast<std::int64_t>(s.size())}, torch::kUInt8)
                    .to(torch::kInt64);
  return {images, labels};
}

torch::Tensor normalise(const torch::Tensor& u8) {
  return (u8.to(torch::kFloat32).div(kPixelMax) - kPixelMean) / kPixelStd;
}

std::vector<float> flatten_parameters(torch::nn::Module& model) {
  std::vector<float> out;
  for (auto& p : model.parameters()) {
    auto c = p.detach().contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

void load_parameters(torch::nn::Module& model, const std::vector<float>& flat) {
  torch::NoGradGuard no_grad;
  std::size_t offset = 0;
  for (auto& p : model.parameters()) {
    auto src = torch::from_blob(const_cast<float*>(flat.data() + offset), p.sizes(), torch::kFloat32);
    p.copy_(src);
    offset += static_cast<std::size_t>(p.numel());
  }
}

std::size_t count_parameters(torch::nn::Module& model) {
  std::size_t n = 0;
  for (auto& p : model.parameters()) n += static_cast<std::size_t>(p.numel());
  return n;
}

}  // namespace hetrain::train
