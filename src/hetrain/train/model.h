// The built-in models. Includes torch: only the trainer and its tests use it.
// No BatchNorm and no dropout: per-worker batch statistics or per-worker
// random masks would make an N-worker step differ from a 1-worker step.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hetrain::train {

// A loss the model defines itself: a TorchScript model's
// loss(output, target) method, which returns the batch's mean loss.
struct ModelLoss {
  std::string owner;  // the model's file, for messages
  std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& target)> fn;
};

class Model : public torch::nn::Module {
 public:
  // x: [batch, 1, rows, cols] float; returns logits [batch, classes].
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // The model's own loss, when it has one (train/objective.h uses it
  // instead of --loss); it lives as long as the model. The built-in models
  // have none.
  virtual const ModelLoss* own_loss() const { return nullptr; }
};

// Builds `name` (mlp | cnn | resnet) for rows x cols inputs and `classes` outputs,
// with parameters drawn from a private generator seeded by `seed`, so every
// worker (and every thread in a test) builds the very same model without
// touching torch's global random state. A `name` ending in .pt is a
// TorchScript file (torch.jit.script(model).save(...)) taking
// [batch, 1, rows, cols] floats to [batch, classes] logits; it keeps its saved
// parameters. A TorchScript model with a loss(output, target) method may
// return any [batch, ...] output: its loss, not `classes`, decides what fits.
// Throws DataError if it cannot be loaded or does not fit.
std::shared_ptr<Model> make_model(const std::string& name, std::int64_t rows, std::int64_t cols,
                                  std::int64_t classes, std::uint64_t seed);

// The same for any per-sample input shape (a .npy file's rows) and any
// number of outputs: the mlp flattens whatever it gets; cnn and resnet take
// [rows, cols] or [1, rows, cols] (a channel is added to [b, rows, cols]
// batches); a TorchScript model gets batches of [b, input_shape...] and must
// return [b, outputs]. Throws UsageError for a shape a built-in cannot take.
std::shared_ptr<Model> make_model(const std::string& name, const std::vector<std::int64_t>& input_shape,
                                  std::int64_t outputs, std::uint64_t seed);

}  // namespace hetrain::train
