#include "hetrain/train/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/script.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "hetrain/common/error.h"
#include "hetrain/train/options.h"

namespace hetrain::train {
namespace {

constexpr std::int64_t kMlpHidden = 256;
constexpr std::int64_t kConv1Channels = 16;
constexpr std::int64_t kConv2Channels = 32;
constexpr std::int64_t kConvKernel = 3;
constexpr std::int64_t kConvPadding = 1;  // "same" convolutions: the pools halve the size
constexpr std::int64_t kCnnHidden = 256;
constexpr std::int64_t kResWidths[] = {32, 64, 128};  // channels of the three residual stages
constexpr std::int64_t kResHidden = 512;              // the fully connected layer before the classifier

class Mlp final : public Model {
 public:
  Mlp(std::int64_t in, std::int64_t classes)
      : fc1_(register_module("fc1", torch::nn::Linear(in, kMlpHidden))),
        fc2_(register_module("fc2", torch::nn::Linear(kMlpHidden, classes))) {}
  torch::Tensor forward(torch::Tensor x) override { return fc2_(torch::relu(fc1_(x.flatten(1)))); }

 private:
  torch::nn::Linear fc1_, fc2_;
};

// conv3x3(16, same) - relu - pool2 - conv3x3(32, same) - relu - pool2 - fc256 - relu - fc.
class Cnn final : public Model {
 public:
  Cnn(std::int64_t rows, std::int64_t cols, std::int64_t classes)
      : conv1_(register_module(
            "conv1", torch::nn::Conv2d(
                         torch::nn::Conv2dOptions(1, kConv1Channels, kConvKernel).padding(kConvPadding)))),
        conv2_(register_module(
            "conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(kConv1Channels, kConv2Channels, kConvKernel)
                                           .padding(kConvPadding)))),
        fc1_(register_module("fc1", torch::nn::Linear(kConv2Channels * side(rows) * side(cols), kCnnHidden))),
        fc2_(register_module("fc2", torch::nn::Linear(kCnnHidden, classes))) {}
  torch::Tensor forward(torch::Tensor x) override {
    if (x.dim() == 3) x = x.unsqueeze(1);  // [b, rows, cols] .npy rows: one channel
    x = torch::max_pool2d(torch::relu(conv1_(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2_(x)), 2);
    return fc2_(torch::relu(fc1_(x.flatten(1))));
  }
  // Spatial size after the two conv+pool stages.
  static std::int64_t side(std::int64_t s) { return s / 2 / 2; }

 private:
  torch::nn::Conv2d conv1_, conv2_;
  torch::nn::Linear fc1_, fc2_;
};

torch::nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kConvKernel).stride(stride).padding(kConvPadding));
}

// Two 3x3 convolutions and a shortcut (identity, or a strided 1x1 when the
// shape changes). No normalisation: per-worker batch statistics would break
// the N-worker == 1-worker equivalence, and one block per stage trains without.
class BasicBlock final : public torch::nn::Module {
 public:
  BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1_(register_module("conv1", conv3x3(in, out, stride))),
        conv2_(register_module("conv2", conv3x3(out, out, 1))) {
    if (stride != 1 || in != out) {
      shortcut_ =
          register_module("shortcut", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = conv2_(torch::relu(conv1_(x)));
    return torch::relu(y + (shortcut_ ? shortcut_(x) : x));
  }

 private:
  torch::nn::Conv2d conv1_, conv2_;
  torch::nn::Conv2d shortcut_{nullptr};
};

// A CIFAR-style residual network for overlap benchmarks: a 3x3 stem, three
// stages of one basic block at 32, 64 and 128 channels (the last two halve
// the size), then fc 512 and the classifier. 3.5M parameters for 28x28
// inputs, most of them in fc1, whose gradient backward produces first.
class ResNet final : public Model {
 public:
  ResNet(std::int64_t rows, std::int64_t cols, std::int64_t classes)
      : stem_(register_module("stem", conv3x3(1, kResWidths[0], 1))),
        block1_(register_module("block1", std::make_shared<BasicBlock>(kResWidths[0], kResWidths[0], 1))),
        block2_(register_module("block2", std::make_shared<BasicBlock>(kResWidths[0], kResWidths[1], 2))),
        block3_(register_module("block3", std::make_shared<BasicBlock>(kResWidths[1], kResWidths[2], 2))),
        fc1_(register_module("fc1", torch::nn::Linear(kResWidths[2] * side(rows) * side(cols), kResHidden))),
        fc2_(register_module("fc2", torch::nn::Linear(kResHidden, classes))) {}
  torch::Tensor forward(torch::Tensor x) override {
    if (x.dim() == 3) x = x.unsqueeze(1);  // [b, rows, cols] .npy rows: one channel
    x = torch::relu(stem_(x));
    x = block3_->forward(block2_->forward(block1_->forward(x)));
    return fc2_(torch::relu(fc1_(x.flatten(1))));
  }
  // Spatial size after the two strided stages (3x3, padding 1, stride 2).
  static std::int64_t side(std::int64_t s) { return (((s + 1) / 2) + 1) / 2; }

 private:
  torch::nn::Conv2d stem_;
  std::shared_ptr<BasicBlock> block1_, block2_, block3_;
  torch::nn::Linear fc1_, fc2_;
};

// torch's default init for Linear and Conv (kaiming-uniform with a = sqrt(5))
// amounts to U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases alike.
void init_parameters(torch::nn::Module& m, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::NoGradGuard no_grad;
  for (auto& sub : m.modules(/*include_self=*/true)) {
    auto params = sub->named_parameters(/*recurse=*/false);
    auto* w = params.find("weight");
    if (w == nullptr) continue;
    const std::int64_t fan_in = w->numel() / w->size(0);  // inputs per output
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    w->uniform_(-bound, bound, gen);
    if (auto* b = params.find("bias")) b->uniform_(-bound, bound, gen);
  }
}

// A TorchScript module (torch.jit.script(model).save(path) in Python) as a
// Model: its parameters are registered again under this nn::Module (the same
// tensors, so gradients bound to them and optimizer updates reach the script
// module), and forward calls the script's forward.
class ScriptModel : public Model {
 public:
  // A jit::Module is a handle (copying it shares the module); it has no move.
  ScriptModel(const torch::jit::Module& module, const std::string& path) : module_(module) {
    if (module_.find_method(kLossMethod)) {
      // The closure holds its own handle to the module.
      loss_ = ModelLoss{path, [m = module_](const torch::Tensor& output, const torch::Tensor& target) mutable {
                          return m.run_method(kLossMethod, output, target).toTensor();
                        }};
    }
    std::size_t i = 0;
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      // nn::Module names may not contain '.', TorchScript's nested ones do.
      std::string name = p.name;
      std::replace(name.begin(), name.end(), '.', '_');
      register_parameter(fmt::format("{}_{}", i++, name), p.value);
    }
  }
  torch::Tensor forward(torch::Tensor x) override { return module_.forward({x}).toTensor(); }
  void train(bool on) override {
    Model::train(on);
    module_.train(on);
  }
  const ModelLoss* own_loss() const override { return loss_ ? &*loss_ : nullptr; }

 private:
  static constexpr const char* kLossMethod = "loss";
  torch::jit::Module module_;
  std::optional<ModelLoss> loss_;  // its loss(output, target) method, if it has one
};

std::shared_ptr<Model> load_script_model(const std::string& path, const std::vector<std::int64_t>& input_shape,
                                         std::int64_t classes) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw DataError(
        fmt::format("cannot load TorchScript model {}: {}", path, what.substr(0, what.find('\n'))));
  }
  auto m = std::make_shared<ScriptModel>(module, path);
  if (m->parameters().empty())
    throw DataError(fmt::format("TorchScript model {} has no parameters to train", path));
  // Fail now, not in the first step, if it does not fit the data.
  torch::Tensor out;
  std::vector<std::int64_t> batch{2};
  batch.insert(batch.end(), input_shape.begin(), input_shape.end());
  try {
    torch::NoGradGuard no_grad;
    out = m->forward(torch::zeros(batch));
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw DataError(fmt::format("TorchScript model {} fails on a [N, {}] batch: {}", path,
                                fmt::join(input_shape, ", "), what.substr(0, what.find('\n'))));
  }
  // With its own loss the model's output is its business; the loss is
  // checked against the targets when training starts (objective.h).
  if (m->own_loss() != nullptr) {
    if (out.dim() == 0 || out.size(0) != 2) {
      throw DataError(fmt::format("TorchScript model {} returns {} for a batch of 2, expected [2, ...]", path,
                                  fmt::format("{}", fmt::join(out.sizes().vec(), "x"))));
    }
    return m;
  }
  if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != classes) {
    throw DataError(fmt::format("TorchScript model {} returns {} for a batch of 2, expected [2, {}] logits",
                                path, fmt::format("{}", fmt::join(out.sizes().vec(), "x")), classes));
  }
  return m;
}

}  // namespace

std::shared_ptr<Model> make_model(const std::string& name, std::int64_t rows, std::int64_t cols,
                                  std::int64_t classes, std::uint64_t seed) {
  return make_model(name, std::vector<std::int64_t>{1, rows, cols}, classes, seed);
}

std::shared_ptr<Model> make_model(const std::string& name, const std::vector<std::int64_t>& input_shape,
                                  std::int64_t classes, std::uint64_t seed) {
  if (is_script_model(name)) return load_script_model(name, input_shape, classes);  // its own parameters
  std::int64_t inputs = 1;
  for (const std::int64_t d : input_shape) inputs *= d;
  if (name == "mlp") {
    auto m = std::make_shared<Mlp>(inputs, classes);
    init_parameters(*m, seed);
    return m;
  }
  // The convolutional models see one-channel images.
  const bool image = input_shape.size() == 2 || (input_shape.size() == 3 && input_shape[0] == 1);
  if ((name == "cnn" || name == "resnet") && !image) {
    throw UsageError(fmt::format("model {} needs inputs of shape (N, rows, cols) or (N, 1, rows, cols), got "
                                 "rows of ({}) (use --model mlp or a TorchScript model)",
                                 name, fmt::join(input_shape, ", ")));
  }
  const std::int64_t rows = image ? input_shape[input_shape.size() - 2] : 1;
  const std::int64_t cols = image ? input_shape.back() : inputs;
  std::shared_ptr<Model> m;
  if (name == "cnn") {
    if (Cnn::side(rows) < 1 || Cnn::side(cols) < 1) {
      throw UsageError(fmt::format("model cnn needs images of at least 4x4, got {}x{}", rows, cols));
    }
    m = std::make_shared<Cnn>(rows, cols, classes);
  } else if (name == "resnet") {
    m = std::make_shared<ResNet>(rows, cols, classes);
  } else {
    throw UsageError(fmt::format("unknown model '{}' (expected mlp, cnn or resnet)", name));
  }
  init_parameters(*m, seed);
  return m;
}

}  // namespace hetrain::train
