#include "hetrain/train/objective.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <exception>
#include <vector>

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

constexpr std::int64_t kProbeBatch = 2;  // samples in the batch that checks a model's own loss

// Float targets as [b, values], the output's layout.
torch::Tensor flat_targets(const torch::Tensor& target) { return target.reshape({target.size(0), -1}); }

// The first line of a torch error, without its C++ backtrace.
std::string first_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c10 != nullptr ? c10->what_without_backtrace() : e.what();
  return what.substr(0, what.find('\n'));
}

// Fails now, not in the first step, if the model's loss cannot train on
// this data: it must take the model's output and a batch of targets as the
// step gives them, and return one number through which gradients flow.
void check_model_loss(const ModelLoss& own, const DataSet& data, Model& model) {
  std::vector<std::int64_t> inputs{kProbeBatch}, targets{kProbeBatch};
  inputs.insert(inputs.end(), data.input_shape.begin(), data.input_shape.end());
  targets.insert(targets.end(), data.target_shape.begin(), data.target_shape.end());
  const auto target_type = data.class_labels ? torch::kInt64 : torch::kFloat32;
  torch::Tensor loss;
  try {
    loss = own.fn(model.forward(torch::zeros(inputs)), torch::zeros(targets, target_type));
  } catch (const std::exception& e) {
    throw DataError(fmt::format("TorchScript model {}: loss(output, target) fails on a batch of {} with {} "
                                "targets of shape [{}]: {}",
                                own.owner, kProbeBatch, data.class_labels ? "int64" : "float32",
                                fmt::join(targets, ", "), first_line(e)));
  }
  if (loss.dim() != 0) {
    throw DataError(fmt::format("TorchScript model {}: loss(output, target) returns a tensor of shape [{}], "
                                "expected a scalar (the batch's mean loss)",
                                own.owner, fmt::join(loss.sizes().vec(), ", ")));
  }
  if (!loss.requires_grad()) {
    throw DataError(fmt::format("TorchScript model {}: loss(output, target) does not depend on the output "
                                "(no gradient reaches the parameters)",
                                own.owner));
  }
}

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

LossKind resolve_loss(const std::string& flag, const DataSet& data, Model& model) {
  const ModelLoss* own = model.own_loss();
  if (own == nullptr) return resolve_loss(flag, data);
  if (!flag.empty()) {
    throw UsageError(fmt::format("--loss {} cannot be used with {}, which defines its own loss(output, target) "
                                 "(leave out --loss: the model's loss is used)",
                                 flag, own->owner));
  }
  check_model_loss(*own, data, model);
  return LossKind(*own);
}

const char* loss_name(const LossKind& k) {
  switch (k.kind()) {
    case LossKind::kCrossEntropy: return "cross-entropy";
    case LossKind::kMse: return "mse";
    case LossKind::kBceWithLogits: return "bce-with-logits";
    case LossKind::kModel: return "model";
  }
  return "?";
}

std::int64_t model_outputs(const LossKind& k, const DataSet& data) {
  if (k == LossKind::kCrossEntropy) return static_cast<std::int64_t>(data.num_classes);
  std::int64_t n = 1;
  for (const std::int64_t d : data.target_shape) n *= d;
  return n;
}

torch::Tensor batch_loss(const LossKind& k, const torch::Tensor& output, const torch::Tensor& target) {
  switch (k.kind()) {
    case LossKind::kCrossEntropy: return torch::nn::functional::cross_entropy(output, target);
    case LossKind::kMse: return torch::mse_loss(output, flat_targets(target));
    case LossKind::kBceWithLogits:
      return torch::binary_cross_entropy_with_logits(output, flat_targets(target));
    case LossKind::kModel: return k.own().fn(output, target);
  }
  return {};
}

const char* metric_name(const LossKind& k) {
  switch (k.kind()) {
    case LossKind::kCrossEntropy: return "accuracy";
    case LossKind::kMse: return "rmse";
    case LossKind::kBceWithLogits: return "label_accuracy";
    case LossKind::kModel: return "loss";
  }
  return "?";
}

bool metric_higher_is_better(const LossKind& k) { return k.kind() != LossKind::kMse && k.kind() != LossKind::kModel; }

MetricSums metric_sums(const LossKind& k, const torch::Tensor& output, const torch::Tensor& target) {
  switch (k.kind()) {
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
    case LossKind::kModel: {
      // The batch's mean loss back to a sum, so batches of any size average right.
      const auto n = static_cast<double>(output.size(0));
      return {k.own().fn(output, target).item<double>() * n, n};
    }
  }
  return {};
}

double metric_value(const LossKind& k, const MetricSums& s) {
  if (s.count <= 0.0) return 0.0;
  const double mean = s.sum / s.count;
  return k.kind() == LossKind::kMse ? std::sqrt(mean) : mean;
}

double evaluate(Model& model, const Examples& test, const LossKind& k, comm::Group& group) {
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
