// What training minimises and what the test set measures: the loss follows
// the targets (--loss, by default cross-entropy for integer class labels and
// mean squared error for float targets), or is the model's own (a
// TorchScript model's loss(output, target) method, which then rules out
// --loss); the test metric follows the loss.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "hetrain/comm/group.h"
#include "hetrain/train/examples.h"
#include "hetrain/train/model.h"

namespace hetrain::train {

// Which loss training minimises: a built-in one, or the model's own (kModel,
// which points to it: valid as long as the model). A small value, copied
// freely (the step keeps one).
class LossKind {
 public:
  enum Kind { kCrossEntropy, kMse, kBceWithLogits, kModel };
  // Implicit, so that a built-in reads as LossKind::kMse wherever a LossKind goes.
  LossKind(Kind k) : kind_(k) {}
  explicit LossKind(const ModelLoss& own) : kind_(kModel), own_(&own) {}
  Kind kind() const { return kind_; }
  const ModelLoss& own() const { return *own_; }  // kModel only
  bool operator==(Kind k) const { return kind_ == k; }

 private:
  Kind kind_;
  const ModelLoss* own_ = nullptr;
};

// --loss ("" = by the targets' type) checked against the data set. Throws
// UsageError for a loss the targets cannot feed (cross-entropy on float
// targets, mse or bce-with-logits on class labels).
LossKind resolve_loss(const std::string& flag, const DataSet& data);
// The same for `model`: its own loss when it has one, after checking on a
// batch of 2 that it takes the model's output and the data's targets and
// returns a scalar that depends on the output (DataError otherwise, naming
// the model's file); UsageError for --loss given as well.
LossKind resolve_loss(const std::string& flag, const DataSet& data, Model& model);
// "cross-entropy", "mse", "bce-with-logits"; "model" for the model's own.
const char* loss_name(const LossKind& k);

// The model's outputs per sample: classes for cross-entropy, else one per
// target value.
std::int64_t model_outputs(const LossKind& k, const DataSet& data);

// The mean loss of a batch (output [b, outputs], targets as Examples give them).
torch::Tensor batch_loss(const LossKind& k, const torch::Tensor& output, const torch::Tensor& target);

// The test metric: "accuracy" (cross-entropy), "rmse" (mse),
// "label_accuracy" (bce-with-logits: the mean over labels of (logit > 0) ==
// (target > 0.5)) or "loss" (the model's own: its loss over the test set,
// each evaluation batch's mean weighted by its samples). In the metrics JSON
// as test_<name>.
const char* metric_name(const LossKind& k);
// Whether a larger metric is better (accuracies) or a smaller one (rmse, loss).
bool metric_higher_is_better(const LossKind& k);

// A batch's contribution to the metric, summed over ranks and batches before
// metric_value: {sum, count}.
struct MetricSums {
  double sum = 0.0, count = 0.0;
};
MetricSums metric_sums(const LossKind& k, const torch::Tensor& output, const torch::Tensor& target);
double metric_value(const LossKind& k, const MetricSums& s);

// The metric on the whole test set: each rank evaluates its share, the sums
// are added up over ranks (a collective: every rank calls it).
double evaluate(Model& model, const Examples& test, const LossKind& k, comm::Group& group);

}  // namespace hetrain::train
