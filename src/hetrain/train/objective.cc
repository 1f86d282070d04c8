#include "hetrain/train/objective.h"

#include <fmt/format.h>

#include <cmath>

#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {

constexpr double kLabelThreshold = 0.5;  // a bce target above this is a positive label
constexpr std::size_t kEvalBatch = 1024;  // samples per evaluation forward

LossKind parse_loss(const std::string& flag) {
  if (flag == "cross-entropy") return LossKind::kCrossEntropy;
  if (flag == "mse") return LossKind::kMse;
  if (flag == "bce-with-logits") return LossKind::kBceWithLogits;
  throw UsageError(fmt::format("unknown --loss '{}' (expected cross-entropy, mse or bce-with-logits)", flag));
}

// Float targets as [b, values], the output's layout.
torch::Tensor flat_targets(const torch::Tensor& target) { return target.reshape({target.size(0), -1}); }

}  // namespace

LossKind resolve_loss(const std::string& flag, const DataSet& data) {
  if (flag.empty()) return data.class_labels ? LossKind::kCrossEntropy : LossKind::kMse;
  const LossKind k = parse_loss(flag);
  if (k == LossKind::kCrossEntropy && !data.class_labels) {
    throw UsageError(
        fmt::format("--loss cross-entropy needs integer class labels, but the targets of {} are float32 "
                    "(use --loss mse or bce-with-logits)",
                    data.name));
  }
  if (k != LossKind::kCrossEntropy && data.class_labels) {
    throw UsageError(fmt::format("--loss {} needs float32 targets, but the targets of {} are class labels "
                                 "(use --loss cross-entropy)",
                                 flag, data.name));
  }
  return k;
}

const char* loss_name(LossKind k) {
  switch (k) {
    case LossKind::kCrossEntropy: return "cross-entropy";
    case LossKind::kMse: return "mse";
    case LossKind::kBceWithLogits: return "bce-with-logits";
  }
  return "?";
}

std::int64_t model_outputs(LossKind k, const DataSet& data) {
  if (k == LossKind::kCrossEntropy) return static_cast<std::int64_t>(data.num_classes);
  std::int64_t n = 1;
  for (const std::int64_t d : data.target_shape) n *= d;
  return n;
}

torch::Tensor batch_loss(LossKind k, const torch::Tensor& output, const torch::Tensor& target) {
  switch (k) {
    case LossKind::kCrossEntropy: return torch::nn::functional::cross_entropy(output, target);
    case LossKind::kMse: return torch::mse_loss(output, flat_targets(target));
    case LossKind::kBceWithLogits:
      return torch::binary_cross_entropy_with_logits(output, flat_targets(target));
  }
  return {};
}

const char* metric_name(LossKind k) {
  switch (k) {
    case LossKind::kCrossEntropy: return "accuracy";
    case LossKind::kMse: return "rmse";
    case LossKind::kBceWithLogits: return "label_accuracy";
  }
  return "?";
}

bool metric_higher_is_better(LossKind k) { return k != LossKind::kMse; }

MetricSums metric_sums(LossKind k, const torch::Tensor& output, const torch::Tensor& target) {
  switch (k) {
    case LossKind::kCrossEntropy:
      return {output.argmax(1).eq(target).sum().item<double>(), static_cast<double>(target.size(0))};
    case LossKind::kMse: {
      const auto t = flat_targets(target);
      return {(output - t).pow(2).sum().item<double>(), static_cast<double>(t.numel())};
    }
    case LossKind::kBceWithLogits: {
      const auto t = flat_targets(target);
      return {output.gt(0).eq(t.gt(kLabelThreshold)).sum().item<double>(), static_cast<double>(t.numel())};
    }
  }
  return {};
}

double metric_value(LossKind k, const MetricSums& s) {
  if (s.count <= 0.0) return 0.0;
  const double mean = s.sum / s.count;
  return k == LossKind::kMse ? std::sqrt(mean) : mean;
}

double evaluate(Model& model, const Examples& test, LossKind k, comm::Group& group) {
  torch::NoGradGuard no_grad;
  const std::size_t n = test.size();
  const auto rank = static_cast<std::size_t>(group.rank()), size = static_cast<std::size_t>(group.size());
  const std::size_t begin = n * rank / size, end = n * (rank + 1) / size;
  std::vector<double> sums{0.0, 0.0};
  for (std::size_t i = begin; i < end; i += kEvalBatch) {
    const Batch b = test.range(i, std::min(kEvalBatch, end - i));
    const MetricSums s = metric_sums(k, model.forward(b.x), b.y);
    sums[0] += s.sum;
    sums[1] += s.count;
  }
  group.allreduce_sum(std::span<double>(sums));
  return metric_value(k, {sums[0], sums[1]});
}

}  // namespace hetrain::train
