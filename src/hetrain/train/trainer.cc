#include "hetrain/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "hetrain/alloc/policy.h"
#include "hetrain/comm/allreduce.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/data/synthetic.h"
#include "hetrain/report/trace.h"
#include "hetrain/train/checkpoint.h"
#include "hetrain/train/device_time.h"
#include "hetrain/train/model.h"
#include "hetrain/train/reducer.h"

namespace hetrain::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Fashion-MNIST pixel statistics after scaling to [0, 1].
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;
constexpr double kSecondsPerMs = 1e-3;
constexpr double kPixelMax = 255.0;
constexpr std::int64_t kEvalBatch = 1024;  // samples per evaluation forward

// Telemetry after the gradients in the reduced buffer, in blocks of N floats.
constexpr std::size_t kComputeSlot = 0;      // compute seconds, one per rank
constexpr std::size_t kLossSlot = 1;         // scaled loss, one per rank
constexpr std::size_t kFingerprintSlot = 2;  // first float: sum of every rank's split fingerprint
constexpr std::size_t kTelemetrySlots = 3;

// A checksum of a split that stays exact in float when N ranks add it up
// (below 2^24 for up to comm::kMaxWorkers = 4096 ranks).
constexpr std::size_t kFingerprintModulus = 4093;
float split_fingerprint(const std::vector<std::size_t>& split) {
  std::size_t f = 0;
  for (std::size_t i = 0; i < split.size(); ++i) f = (f + (i + 1) * split[i]) % kFingerprintModulus;
  return static_cast<float>(f);
}

// An ImageSet as tensors, without copying the pixels.
struct Tensors {
  torch::Tensor images;  // uint8 [n, 1, rows, cols]
  torch::Tensor labels;  // int64 [n]
};
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

std::vector<float> flatten_parameters(Model& model) {
  std::vector<float> out;
  for (auto& p : model.parameters()) {
    auto c = p.detach().contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

void load_parameters(Model& model, const std::vector<float>& flat) {
  torch::NoGradGuard no_grad;
  std::size_t offset = 0;
  for (auto& p : model.parameters()) {
    auto src = torch::from_blob(const_cast<float*>(flat.data() + offset), p.sizes(), torch::kFloat32);
    p.copy_(src);
    offset += static_cast<std::size_t>(p.numel());
  }
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainOptions& o, Model& model) {
  if (o.optimizer == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        model.parameters(), torch::optim::SGDOptions(effective_lr(o)).momentum(o.momentum));
  }
  return std::make_unique<torch::optim::Adam>(model.parameters(), torch::optim::AdamOptions(effective_lr(o)));
}

// Accuracy on this rank's share of the test set, summed over ranks.
double evaluate(Model& model, const Tensors& test, comm::Group& group) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = test.labels.size(0);
  const std::int64_t begin = n * group.rank() / group.size();
  const std::int64_t end = n * (group.rank() + 1) / group.size();
  std::vector<double> counts{0.0, static_cast<double>(end - begin)};
  for (std::int64_t i = begin; i < end; i += kEvalBatch) {
    const std::int64_t len = std::min(kEvalBatch, end - i);
    auto logits = model.forward(normalise(test.images.narrow(0, i, len)));
    counts[0] += logits.argmax(1).eq(test.labels.narrow(0, i, len)).sum().item<double>();
  }
  group.allreduce_sum(std::span<double>(counts));
  return counts[1] > 0 ? counts[0] / counts[1] : 0.0;
}

// Every rank's per-step records of one epoch, gathered with one SUM
// allreduce where each rank fills only its own slots.
void gather_steps(comm::Group& group, std::size_t epoch, const std::vector<std::size_t>& batch_of_rank,
                  const std::vector<double>& compute_of_rank, const std::vector<double>& wait_of_rank,
                  const std::vector<double>& hidden_of_rank, std::vector<StepRecord>& out) {
  const auto n = static_cast<std::size_t>(group.size());
  const auto r = static_cast<std::size_t>(group.rank());
  const std::size_t steps = batch_of_rank.size();
  constexpr std::size_t kFields = 4;
  std::vector<double> buf(steps * n * kFields, 0.0);
  for (std::size_t s = 0; s < steps; ++s) {
    buf[(s * kFields + 0) * n + r] = static_cast<double>(batch_of_rank[s]);
    buf[(s * kFields + 1) * n + r] = compute_of_rank[s];
    buf[(s * kFields + 2) * n + r] = wait_of_rank[s];
    buf[(s * kFields + 3) * n + r] = hidden_of_rank[s];
  }
  group.allreduce_sum(std::span<double>(buf));
  for (std::size_t s = 0; s < steps; ++s) {
    StepRecord rec;
    rec.epoch = epoch;
    for (std::size_t i = 0; i < n; ++i) {
      rec.local_batch.push_back(static_cast<std::size_t>(buf[(s * kFields + 0) * n + i] + 0.5));
      rec.compute_seconds.push_back(buf[(s * kFields + 1) * n + i]);
      rec.wait_seconds.push_back(buf[(s * kFields + 2) * n + i]);
      rec.hidden_seconds.push_back(buf[(s * kFields + 3) * n + i]);
    }
    out.push_back(std::move(rec));
  }
}

// Workers started with different options would train different things (or
// deadlock on different step counts): every rank compares its options'
// checksum with every other's before the first step.
void check_same_config(const TrainOptions& o, comm::Group& group) {
  std::vector<double> sums(static_cast<std::size_t>(group.size()), 0.0);
  const double mine = static_cast<double>(config_checksum(o));
  sums[static_cast<std::size_t>(group.rank())] = mine;
  group.allreduce_sum(std::span<double>(sums));
  for (std::size_t r = 0; r < sums.size(); ++r) {
    if (sums[r] != sums[0]) {
      throw UsageError(fmt::format("rank {} was started with a different configuration than rank 0 "
                                   "(flags, config file or data must match on every worker)",
                                   r));
    }
  }
}

}  // namespace

data::DataSplit load_data(const TrainOptions& o) {
  if (!o.train_images.empty()) {
    return {data::read_idx_pair(o.train_images, o.train_labels),
            data::read_idx_pair(o.test_images, o.test_labels)};
  }
  if (o.data == "synthetic") return data::make_synthetic(o.synthetic_train, o.synthetic_test, o.seed);
  return data::load_mnist_dir(o.data == "fashion-mnist" ? std::string(data::kFashionMnistDir) : o.data);
}

void set_compute_threads(int threads) {
  HETRAIN_ENFORCE_LT(0, threads);
  torch::set_num_threads(threads);
}

namespace {
void check_data(const data::DataSplit& data) {
  if (data.train.size() == 0 || data.test.size() == 0) throw DataError("the data set is empty");
  if (data.train.rows != data.test.rows || data.train.cols != data.test.cols) {
    throw DataError(fmt::format("train images are {}x{} but test images are {}x{}", data.train.rows,
                                data.train.cols, data.test.rows, data.test.cols));
  }
}
}  // namespace

TrainResult train(const TrainOptions& o, const data::DataSplit& data, comm::Group& group,
                  const EpochCallback& on_epoch, const StepCallback& on_step) {
  validate(o, group.size());
  check_data(data);
  auto model = make_model(o.model, static_cast<std::int64_t>(data.train.rows),
                          static_cast<std::int64_t>(data.train.cols),
                          static_cast<std::int64_t>(data.train.num_classes), o.seed);
  return train(o, data, group, model, on_epoch, on_step);
}

TrainResult train(const TrainOptions& o, const data::DataSplit& data, comm::Group& group,
                  const std::shared_ptr<Model>& model, const EpochCallback& on_epoch, const StepCallback& on_step) {
  HETRAIN_ENFORCE_EQ(model != nullptr, true);
  // The model is given: o.model is only its name in the metrics.
  TrainOptions checked = o;
  checked.model = "mlp";
  validate(checked, group.size());
  check_same_config(o, group);  // before any collective whose size depends on the options
  check_data(data);
  const auto n = static_cast<std::size_t>(group.size());
  const auto rank = static_cast<std::size_t>(group.rank());
  const std::size_t B = o.global_batch;
  // Rank 0's parameters are the truth, as in DDP.
  {
    auto params = flatten_parameters(*model);
    group.broadcast(std::span<float>(params), 0);
    load_parameters(*model, params);
  }
  std::size_t num_params = 0;
  for (auto& p : model->parameters()) num_params += static_cast<std::size_t>(p.numel());
  // [gradients | compute seconds per rank | scaled loss per rank | split fingerprint]
  std::vector<float> buffer(num_params + kTelemetrySlots * n, 0.0f);
  auto optimizer = make_optimizer(o, *model);
  CheckpointMeta cursor;  // where this run starts, and what its checkpoints are checked against
  cursor.model = o.model;
  cursor.optimizer = o.optimizer;
  cursor.seed = o.seed;
  cursor.global_batch = B;
  cursor.train_samples = data.train.size();
  if (!o.resume_dir.empty()) cursor = load_checkpoint(o.resume_dir, cursor, *model, *optimizer);
  GradientReducer reducer(*model, std::span<float>(buffer), num_params, group, comm::parse_algorithm(o.allreduce),
                          bucket_elements(o), o.overlap);
  DeviceTime device(*model, o.sample_cost_ms > 0.0);

  alloc::PolicyConfig pc;
  pc.name = o.policy;
  pc.shares = o.shares;
  pc.profile_steps = o.profile_steps;
  pc.workers = n;
  pc.global_batch = B;
  pc.bounds.min_local = o.min_local_batch;
  if (o.max_local_batch != 0) pc.bounds.max_local = o.max_local_batch;
  pc.known = cursor.workers;
  auto policy = alloc::make_policy(pc);

  const Tensors train_t = as_tensors(data.train);
  const Tensors test_t = as_tensors(data.test);
  const std::size_t train_n = data.train.size();

  TrainResult result;
  RunMetrics& m = result.metrics;
  m.world_size = group.size();
  m.model = o.model;
  m.policy = o.policy;
  m.allreduce = o.allreduce;
  m.data = o.train_images.empty() ? o.data : o.train_images;
  m.global_batch = B;
  const std::size_t steps_in_epoch = data::steps_per_epoch(train_n, B);
  const std::size_t planned_steps =
      o.max_steps != 0 ? std::min(o.max_steps, o.epochs * steps_in_epoch) : o.epochs * steps_in_epoch;
  m.speeds = o.speeds;
  if (!o.resume_dir.empty()) {
    m.resumed_world_size = cursor.world_size;
    m.resumed_epoch = cursor.epoch;
    m.resumed_step = cursor.step;
  }
  // Rank 0 writes checkpoints; every rank holds the same model and optimizer state.
  auto checkpoint = [&](std::size_t epoch, std::size_t next_step, std::size_t done) {
    if (o.checkpoint_dir.empty() || rank != 0) return;
    CheckpointMeta c = cursor;
    c.epoch = next_step == steps_in_epoch ? epoch + 1 : epoch;
    c.step = next_step == steps_in_epoch ? 0 : next_step;
    c.total_steps = done;
    c.world_size = group.size();
    c.workers = policy->learned();
    save_checkpoint(o.checkpoint_dir, c, *model, *optimizer);
  };
  std::ofstream sample_log;
  if (!o.sample_log.empty()) {
    sample_log.open(fmt::format("{}.rank{}", o.sample_log, rank));
    if (!sample_log) throw DataError(fmt::format("cannot write {}.rank{}", o.sample_log, rank));
  }


  // --trace: every rank times its steps; rank 0 writes the timeline.
  const bool tracing = !o.trace_path.empty();
  std::unique_ptr<report::TraceWriter> tracer;
  if (tracing && rank == 0) tracer = std::make_unique<report::TraceWriter>(o.trace_path, group.size());
  const auto run_start = Clock::now();
  auto since_start = [&](Clock::time_point t) { return std::chrono::duration<double>(t - run_start).count(); };
  std::size_t total_steps = cursor.total_steps;
  bool stop = false;
  for (std::size_t epoch = cursor.epoch; epoch < o.epochs && !stop; ++epoch) {
    const auto epoch_start = Clock::now();
    const auto perm_vec = data::epoch_permutation(train_n, o.seed, epoch);
    const auto perm = torch::tensor(std::vector<std::int64_t>(perm_vec.begin(), perm_vec.end()));
    std::vector<std::size_t> my_batch;
    std::vector<double> my_compute, my_wait, my_hidden;
    std::vector<report::StepTimes> my_times;
    double loss_sum = 0.0;
    std::size_t epoch_steps = 0;
    const std::size_t first_step = epoch == cursor.epoch ? cursor.step : 0;
    std::size_t next_step = first_step;
    for (std::size_t step = first_step; step < steps_in_epoch; ++step) {
      if (o.max_steps != 0 && total_steps >= o.max_steps) {
        stop = true;
        break;
      }
      const std::size_t batch = data::step_batch(train_n, B, step);
      const auto split =
          batch == B ? policy->split() : alloc::scale_split(policy->split(), batch, pc.bounds.max_local);
      const data::Slice slice = data::slice_of(split, rank);
      if (sample_log.is_open()) {
        sample_log << epoch << ' ' << step;
        for (std::size_t k = 0; k < slice.count; ++k) sample_log << ' ' << perm_vec[step * B + slice.begin + k];
        sample_log << std::endl;  // flushed: a killed run's log stays complete
      }

      std::fill(buffer.begin(), buffer.end(), 0.0f);
      reducer.begin_step();
      const double speed = emulated_speed(o, rank, total_steps);
      // The emulated device's time, slowed by the worker's speed, is slept
      // inside forward and backward (train/device_time.h).
      device.begin_step(o.sample_cost_ms * kSecondsPerMs * static_cast<double>(slice.count) / speed);
      const auto t0 = Clock::now();
      double scaled_loss = 0.0;
      if (slice.count > 0) {
        auto idx = perm.narrow(0, static_cast<std::int64_t>(step * B + slice.begin),
                               static_cast<std::int64_t>(slice.count));
        auto x = normalise(train_t.images.index_select(0, idx));
        auto y = train_t.labels.index_select(0, idx);
        auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
        device.after_forward();
        // Scale by b_i/B so the SUM allreduce yields the global-batch mean.
        auto scaled = loss * (static_cast<double>(slice.count) / static_cast<double>(batch));
        scaled.backward();
        scaled_loss = scaled.item<double>();
      }
      if (speed < 1.0) {
        // Emulated slower worker: stretch the host's real compute c to c / s
        // (the device time above is already divided by s).
        const double real = seconds_since(t0) - device.slept_seconds();
        std::this_thread::sleep_for(std::chrono::duration<double>(real * (1.0 / speed - 1.0)));
      }
      const double compute = seconds_since(t0);

      buffer[num_params + kComputeSlot * n + rank] = static_cast<float>(compute);
      buffer[num_params + kLossSlot * n + rank] = static_cast<float>(scaled_loss);
      const float fingerprint = split_fingerprint(split);
      buffer[num_params + kFingerprintSlot * n] = fingerprint;
      const auto t1 = Clock::now();
      // Telemetry rides in the last bucket, after the gradients.
      const ReduceTimes reduced = reducer.finish();
      const double wait = seconds_since(t1);
      // Every rank must have cut the batch the same way, or samples would be
      // skipped or used twice: the fingerprints summed must be N of ours.
      if (buffer[num_params + kFingerprintSlot * n] != fingerprint * static_cast<float>(n)) {
        throw Error(fmt::format("workers disagree on the split at step {} (rank {} used {})", total_steps,
                                rank, fmt::join(split, "/")));
      }
      const double lr = scheduled_lr(o, total_steps, planned_steps);
      for (auto& g : optimizer->param_groups()) g.options().set_lr(lr);
      optimizer->step();

      alloc::Observation obs;
      obs.local_batch = split;
      double step_loss = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        obs.compute_seconds.push_back(buffer[num_params + kComputeSlot * n + i]);
        step_loss += buffer[num_params + kLossSlot * n + i];
      }
      loss_sum += step_loss;
      const auto decide_begin = Clock::now();
      policy->observe(obs);
      if (tracing) {
        my_times.push_back({since_start(t0), since_start(t1), since_start(t1) + wait, since_start(decide_begin),
                            seconds_since(run_start), static_cast<double>(slice.count)});
      }
      my_batch.push_back(slice.count);
      my_compute.push_back(compute);
      my_wait.push_back(wait);
      my_hidden.push_back(reduced.hidden_seconds);
      ++epoch_steps;
      ++total_steps;
      next_step = step + 1;
      if (o.checkpoint_every != 0 && total_steps % o.checkpoint_every == 0) {
        checkpoint(epoch, next_step, total_steps);
      }
      if (on_step) on_step({total_steps, planned_steps, epoch + 1, o.epochs, batch, step_loss, split});
    }
    const double train_seconds = seconds_since(epoch_start);
    gather_steps(group, epoch, my_batch, my_compute, my_wait, my_hidden, m.steps);
    if (tracing) {
      auto times = report::gather_step_times(group, my_times);
      if (tracer) tracer->add_epoch(epoch + 1, total_steps - epoch_steps, std::move(times));
    }
    EpochRecord rec;
    rec.train_seconds = train_seconds;
    rec.epoch = epoch + 1;
    rec.train_loss = epoch_steps > 0 ? loss_sum / static_cast<double>(epoch_steps) : 0.0;
    rec.test_accuracy = evaluate(*model, test_t, group);
    rec.seconds = seconds_since(epoch_start);
    m.epochs.push_back(rec);
    // At the end of each epoch (and of a run cut short by --max-steps), unless
    // the periodic checkpoint just wrote this very cursor.
    if (o.checkpoint_every == 0 || total_steps % o.checkpoint_every != 0) checkpoint(epoch, next_step, total_steps);
    if (on_epoch) on_epoch(rec, m);
  }
  m.wall_seconds = seconds_since(run_start);
  if (tracer) tracer->close();
  result.parameters = flatten_parameters(*model);
  return result;
}

}  // namespace hetrain::train
