// What training minimises and what the test set measures: the loss follows
// the targets (--loss, by default cross-entropy for integer class labels and
// mean squared error for float targets), the test metric follows the loss.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "hetrain/comm/group.h"
#include "hetrain/train/examples.h"
#include "hetrain/train/model.h"

namespace hetrain::train {

enum class LossKind { kCrossEntropy, kMse, kBceWithLogits };

// --loss ("" = by the targets' type) checked against the data set. Throws
// UsageError for a loss the targets cannot feed (cross-entropy on float
// targets, mse or bce-with-logits on class labels).
LossKind resolve_loss(const std::string& flag, const DataSet& data);
const char* loss_name(LossKind k);

// The model's outputs per sample: classes for cross-entropy, else one per
// target value.
std::int64_t model_outputs(LossKind k, const DataSet& data);

// The mean loss of a batch (output [b, outputs], targets as Examples give them).
torch::Tensor batch_loss(LossKind k, const torch::Tensor& output, const torch::Tensor& target);

// The test metric: "accuracy" (cross-entropy), "rmse" (mse) or
// "label_accuracy" (bce-with-logits: the mean over labels of (logit > 0) ==
// (target > 0.5)). In the metrics JSON as test_<name>.
const char* metric_name(LossKind k);
// Whether a larger metric is better (accuracies) or a smaller one (rmse).
bool metric_higher_is_better(LossKind k);

// A batch's contribution to the metric, summed over ranks and batches before
// metric_value: {sum, count}.
struct MetricSums {
  double sum = 0.0, count = 0.0;
};
MetricSums metric_sums(LossKind k, const torch::Tensor& output, const torch::Tensor& target);
double metric_value(LossKind k, const MetricSums& s);

// The metric on the whole test set: each rank evaluates its share, the sums
// are added up over ranks (a collective: every rank calls it).
double evaluate(Model& model, const Examples& test, LossKind k, comm::Group& group);

}  // namespace hetrain::train
