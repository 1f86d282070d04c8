// hetrain's C++ API with a model and a data set of your own.
//
// TinyNet is any torch::nn::Module deriving from hetrain::train::Model; the
// data set is any DataSplit of uint8 images and labels (here: 8x8 images
// where class c lights up row c, drawn from a seed). train::train() then runs
// the same synchronous data-parallel training as `hetrain run`, here with the
// adaptive policy and rank 1 emulated 2x slower when there are two ranks.
//
// Run it as one process, or as N processes with torchrun's variables:
//   build/hetrain_example_custom_model
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 build/hetrain_example_custom_model &
//   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 build/hetrain_example_custom_model
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <random>

#include "hetrain/comm/env.h"
#include "hetrain/comm/gloo/gloo_group.h"
#include "hetrain/common/error.h"
#include "hetrain/train/model.h"
#include "hetrain/train/trainer.h"

namespace {

constexpr std::size_t kSide = 8;      // image side, pixels
constexpr std::size_t kClasses = 4;   // class c lights up row c
constexpr std::int64_t kHidden = 32;  // hidden units
constexpr std::uint8_t kLit = 200;    // brightness of the class's row
constexpr int kNoise = 60;            // uniform noise on every pixel, 0..kNoise
constexpr auto kTimeout = std::chrono::seconds(60);

// Your model: a torch::nn::Module with forward(x), x = [batch, 1, rows, cols].
class TinyNet : public hetrain::train::Model {
 public:
  TinyNet()
      : fc1_(register_module("fc1", torch::nn::Linear(kSide * kSide, kHidden))),
        fc2_(register_module("fc2", torch::nn::Linear(kHidden, kClasses))) {}
  torch::Tensor forward(torch::Tensor x) override { return fc2_(torch::relu(fc1_(x.flatten(1)))); }

 private:
  torch::nn::Linear fc1_, fc2_;
};

// Your data: the same on every rank (same seed).
hetrain::data::ImageSet make_rows(std::size_t n, std::uint64_t seed) {
  hetrain::data::ImageSet s;
  s.rows = s.cols = kSide;
  s.num_classes = kClasses;
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> noise(0, kNoise);
  for (std::size_t i = 0; i < n; ++i) {
    const auto label = static_cast<std::uint8_t>(i % kClasses);
    s.labels.push_back(label);
    for (std::size_t r = 0; r < kSide; ++r) {
      for (std::size_t c = 0; c < kSide; ++c) {
        s.pixels.push_back(static_cast<std::uint8_t>((r == label ? kLit : 0) + noise(gen)));
      }
    }
  }
  return s;
}

int run() {
  namespace ht = hetrain;
  const ht::comm::WorldInfo world = ht::comm::world_from_env(ht::comm::process_env());
  ht::comm::Group group = ht::comm::connect_gloo(world, kTimeout);

  ht::train::TrainOptions o;
  o.model = "tinynet";  // only a name, for the metrics
  o.alloc.name = "adaptive";
  o.global_batch = 64;
  o.epochs = 3;
  if (group.size() == 2) o.speeds = {1.0, 0.5};
  // A steady synthetic cost per sample (a sleep), so that on a busy machine
  // the emulated 2x difference stands out from scheduling noise.
  o.sample_cost_ms = 0.1;
  ht::train::set_compute_threads(1);
  const ht::data::DataSplit data{make_rows(2048, 1), make_rows(512, 2)};

  auto on_epoch = [&](const ht::record::EpochRecord& e, const ht::record::RunMetrics&) {
    if (group.rank() == 0)
      fmt::print("epoch {}  loss {:.4f}  test accuracy {:.4f}\n", e.epoch, e.train_loss, e.test_accuracy);
  };
  const auto result = ht::train::train(o, data, group, std::make_shared<TinyNet>(), on_epoch);
  if (group.rank() == 0) {
    const auto& last = result.metrics.steps.back().local_batch;
    fmt::print("done: test accuracy {:.4f}, last split {}\n", result.metrics.epochs.back().test_accuracy,
               fmt::join(last, "/"));
  }
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const hetrain::Error& e) {
    std::fprintf(stderr, "custom_model: error: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {  // from torch or the standard library
    std::fprintf(stderr, "custom_model: error: %s\n", e.what());
    return static_cast<int>(hetrain::ExitCode::kInternal);
  }
}
