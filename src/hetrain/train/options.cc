#include "hetrain/train/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "hetrain/comm/allreduce.h"
#include "hetrain/comm/env.h"
#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {
constexpr double kDefaultAdamLr = 2e-3;
constexpr double kDefaultSgdLr = 0.05;
constexpr std::size_t kMaxEpochs = 1'000'000;
}  // namespace

bool is_script_model(const std::string& model) {
  constexpr std::string_view kSuffix = ".pt";
  return model.size() > kSuffix.size() && model.ends_with(kSuffix);
}

namespace {
void validate_model(const std::string& model) {
  if (is_script_model(model) && !std::filesystem::is_regular_file(model)) {
    throw DataError(fmt::format("cannot read TorchScript model {}: no such file", model));
  }
  if (model != "mlp" && model != "cnn" && model != "resnet" && !is_script_model(model)) {
    throw UsageError(
        fmt::format("unknown model '{}' (expected mlp, cnn, resnet or a TorchScript file *.pt)", model));
  }
}
}  // namespace

namespace {
// Policy, shares, local-batch bounds and emulation, for n workers.
void validate_allocation(const TrainOptions& o, std::size_t n) {
  const alloc::AllocOptions& a = o.alloc;
  if (a.name != "equal" && a.name != "static" && a.name != "adaptive") {
    throw UsageError(fmt::format("unknown policy '{}' (expected equal, static or adaptive)", a.name));
  }
  if (a.name == "static" && !a.shares.empty() && a.shares.size() != n) {
    throw UsageError(
        fmt::format("--policy static needs --shares with one value per worker: got {} for {} workers",
                    a.shares.size(), n));
  }
  if (a.name != "static" && !a.shares.empty()) {
    throw UsageError("--shares applies only to --policy static");
  }
  for (double s : a.shares) {
    if (!(s > 0.0) || !std::isfinite(s))
      throw UsageError(fmt::format("--shares values must be > 0, got {}", s));
  }
  if (!o.speeds.empty() && o.speeds.size() != n) {
    throw UsageError(fmt::format("--speeds has {} values but there are {} workers", o.speeds.size(), n));
  }
  for (double s : o.speeds) {
    if (!(s > 0.0 && s <= 1.0)) throw UsageError(fmt::format("--speeds values must be in (0, 1], got {}", s));
  }
  for (const auto& c : o.slowdowns) {
    if (c.rank >= n)
      throw UsageError(fmt::format("--slowdown names rank {} but there are {} workers", c.rank, n));
    if (!(c.speed > 0.0 && c.speed <= 1.0))
      throw UsageError(fmt::format("--slowdown speeds must be in (0, 1], got {}", c.speed));
  }
  if (!(o.sample_cost_ms >= 0.0) || !std::isfinite(o.sample_cost_ms)) {
    throw UsageError(fmt::format("--sample-cost-ms must be >= 0, got {}", o.sample_cost_ms));
  }
  const std::size_t lo = a.bounds.min_local, hi = a.bounds.max_local;
  const bool capped = hi != alloc::Bounds{}.max_local;
  if (capped && lo > hi) {
    throw UsageError(fmt::format("--min-local-batch {} exceeds --max-local-batch {}", lo, hi));
  }
  if (lo * n > o.global_batch) {
    throw UsageError(
        fmt::format("{} workers x --min-local-batch {} exceed the global batch {}", n, lo, o.global_batch));
  }
  if (capped && hi * n < o.global_batch) {
    throw UsageError(
        fmt::format("{} workers x --max-local-batch {} cannot hold the global batch {}", n, hi, o.global_batch));
  }
}

void validate_data(const TrainOptions& o) {
  const bool any_path =
      !o.train_images.empty() || !o.train_labels.empty() || !o.test_images.empty() || !o.test_labels.empty();
  const bool all_paths =
      !o.train_images.empty() && !o.train_labels.empty() && !o.test_images.empty() && !o.test_labels.empty();
  // .npy: inputs and targets for training, the test pair optional.
  const bool npy = o.train_images.ends_with(".npy");
  if (npy && (o.train_labels.empty() || o.test_images.empty() != o.test_labels.empty())) {
    throw UsageError(
        "with .npy files give --train-x and --train-y, and --test-x with --test-y or neither");
  }
  if (any_path && !all_paths && !npy) {
    throw UsageError(
        "give all four of --train-images, --train-labels, --test-images, --test-labels, or none");
  }
  if (!o.loss.empty() && o.loss != "cross-entropy" && o.loss != "mse" && o.loss != "bce-with-logits") {
    throw UsageError(
        fmt::format("unknown --loss '{}' (expected cross-entropy, mse or bce-with-logits)", o.loss));
  }
  if (o.data == "synthetic" && (o.synthetic_train == 0 || o.synthetic_test == 0)) {
    throw UsageError("--synthetic-train and --synthetic-test must be > 0");
  }
}

void validate_running(const TrainOptions& o) {
  comm::parse_algorithm(o.allreduce);  // throws UsageError for an unknown name
  if (!(o.bucket_mb > 0.0) || !std::isfinite(o.bucket_mb)) {
    throw UsageError(fmt::format("--bucket-mb must be > 0, got {}", o.bucket_mb));
  }
  if (o.threads < 0) throw UsageError(fmt::format("--threads must be >= 0, got {}", o.threads));
  if (!(o.timeout_seconds > 0.0) || !std::isfinite(o.timeout_seconds)) {
    throw UsageError(fmt::format("--timeout must be > 0 seconds, got {}", o.timeout_seconds));
  }
  if (o.checkpoint_every != 0 && o.checkpoint_dir.empty()) {
    throw UsageError("--checkpoint-every needs --checkpoint DIR");
  }
}
}  // namespace

void validate(const TrainOptions& o, int world_size, ModelSource source) {
  if (world_size < 1 || world_size > comm::kMaxWorkers) {
    throw UsageError(fmt::format("world size must be in [1, {}], got {}", comm::kMaxWorkers, world_size));
  }
  const auto n = static_cast<std::size_t>(world_size);
  if (source == ModelSource::kNamed) validate_model(o.model);
  if (o.optimizer != "adam" && o.optimizer != "sgd") {
    throw UsageError(fmt::format("unknown optimizer '{}' (expected adam or sgd)", o.optimizer));
  }
  if (o.lr_schedule != "cosine" && o.lr_schedule != "constant") {
    throw UsageError(fmt::format("unknown --lr-schedule '{}' (expected cosine or constant)", o.lr_schedule));
  }
  if (!(o.lr >= 0.0) || !std::isfinite(o.lr))
    throw UsageError(fmt::format("--lr must be >= 0, got {}", o.lr));
  if (o.epochs == 0 || o.epochs > kMaxEpochs)
    throw UsageError(fmt::format("--epochs must be in [1, {}], got {}", kMaxEpochs, o.epochs));
  if (o.global_batch < n) {
    throw UsageError(
        fmt::format("global batch {} is smaller than the number of workers {}", o.global_batch, n));
  }
  validate_allocation(o, n);
  validate_data(o);
  validate_running(o);
}

namespace {

// The number of fields of an aggregate: the most initializers T{...} takes
// (every field of SharedOptions is a scalar, a string or a vector, so no
// brace elision blurs the count).
struct AnyField {
  template <typename T>
  operator T() const;  // declared only: used in unevaluated contexts
};
template <typename T, typename... Fields>
constexpr std::size_t count_fields() {
  if constexpr (requires { T{std::declval<Fields>()..., AnyField{}}; }) {
    return count_fields<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

// serialize() below names this many fields. A field added to SharedOptions
// without being serialized would escape the cross-rank check: this fails
// the build instead.
constexpr std::size_t kSerializedSharedFields = 28;
static_assert(count_fields<SharedOptions>() == kSerializedSharedFields,
              "a field was added to (or removed from) SharedOptions: serialize it in serialize() below");

}  // namespace

std::string serialize(const SharedOptions& o) {
  nlohmann::json slowdowns = nlohmann::json::array();
  for (const auto& c : o.slowdowns) slowdowns.push_back({c.rank, c.step, c.speed});
  // The placement is discovered, not chosen; the cap is 0 for none, as the flag.
  const std::size_t max_local =
      o.alloc.bounds.max_local == alloc::Bounds{}.max_local ? 0 : o.alloc.bounds.max_local;
  const nlohmann::json doc = {
      {"model", o.model}, {"optimizer", o.optimizer}, {"lr", o.lr}, {"momentum", o.momentum},
      {"lr_schedule", o.lr_schedule}, {"epochs", o.epochs}, {"global_batch", o.global_batch},
      {"max_steps", o.max_steps}, {"seed", o.seed}, {"data", o.data}, {"train_images", o.train_images},
      {"train_labels", o.train_labels}, {"test_images", o.test_images}, {"test_labels", o.test_labels},
      {"synthetic_train", o.synthetic_train}, {"synthetic_test", o.synthetic_test}, {"loss", o.loss},
      {"eval_every", o.eval_every}, {"policy", o.alloc.name},
      {"shares", o.alloc.shares}, {"profile_steps", o.alloc.profile_steps},
      {"min_local_batch", o.alloc.bounds.min_local}, {"max_local_batch", max_local},
      {"speeds", o.speeds}, {"slowdowns", slowdowns},
      {"sample_cost_ms", o.sample_cost_ms}, {"allreduce", o.allreduce}, {"bucket_mb", o.bucket_mb},
      {"overlap", o.overlap}, {"checkpoint_dir", o.checkpoint_dir}, {"checkpoint_every", o.checkpoint_every},
      {"resume_dir", o.resume_dir}};
  return doc.dump();
}

std::uint32_t config_checksum(const SharedOptions& o) {
  const std::string text = serialize(o);
  return static_cast<std::uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

std::vector<TrainOptions::SpeedChange> parse_slowdowns(const std::string& text) {
  std::vector<TrainOptions::SpeedChange> out;
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    TrainOptions::SpeedChange c;
    std::size_t consumed = 0;
    const auto at = item.find('@'), colon = item.find(':');
    bool ok = at != std::string::npos && colon != std::string::npos && at < colon && at > 0;
    try {
      if (ok) {
        c.rank = std::stoul(item.substr(0, at), &consumed);
        ok = consumed == at;
        c.step = std::stoul(item.substr(at + 1, colon - at - 1), &consumed);
        ok = ok && consumed == colon - at - 1;
        c.speed = std::stod(item.substr(colon + 1), &consumed);
        ok = ok && consumed == item.size() - colon - 1;
      }
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok) throw UsageError(fmt::format("--slowdown item '{}' is not RANK@STEP:SPEED", item));
    out.push_back(c);
    pos = end + 1;
  }
  return out;
}

double emulated_speed(const TrainOptions& o, std::size_t rank, std::size_t step) {
  double speed = o.speeds.empty() ? 1.0 : o.speeds[rank];
  std::size_t latest = 0;
  bool any = false;
  for (const auto& c : o.slowdowns) {
    if (c.rank == rank && c.step <= step && (!any || c.step >= latest)) {
      speed = c.speed, latest = c.step, any = true;
    }
  }
  return speed;
}

std::size_t bucket_elements(const TrainOptions& o) {
  constexpr double kBytesPerMb = 1024.0 * 1024.0;
  return std::max<std::size_t>(1, static_cast<std::size_t>(o.bucket_mb * kBytesPerMb / sizeof(float)));
}

double effective_lr(const TrainOptions& o) {
  if (o.lr > 0.0) return o.lr;
  return o.optimizer == "adam" ? kDefaultAdamLr : kDefaultSgdLr;
}

double scheduled_lr(const TrainOptions& o, std::size_t step, std::size_t total_steps) {
  const double base = effective_lr(o);
  if (o.lr_schedule == "constant" || total_steps == 0) return base;
  constexpr double kPi = 3.14159265358979323846;
  const double progress = std::min(1.0, static_cast<double>(step) / static_cast<double>(total_steps));
  return 0.5 * base * (1.0 + std::cos(kPi * progress));
}

}  // namespace hetrain::train
