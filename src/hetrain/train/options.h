// Everything a training run is configured by. Plain data, validated in one
// place before any worker touches a file or a socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"

namespace hetrain::train {

// Defaults, with units.
inline constexpr std::size_t kDefaultGlobalBatch = 64;       // samples per step
inline constexpr double kDefaultTimeoutSeconds = 120.0;      // rendezvous and collectives
inline constexpr std::size_t kDefaultSyntheticTrain = 6000;  // samples
inline constexpr std::size_t kDefaultSyntheticTest = 1000;   // samples
// MiB per allreduce call. Smaller than DDP's 25 MiB (tuned for NCCL) so the
// reduction of the last layers can start early in backward; bench/overlap_bench.py
// checks what the overlap buys (docs/benchmarks.md, "Overlap with backward").
inline constexpr double kDefaultBucketMb = 2.0;

// What every rank must share: what is trained, on what, and how each batch
// is cut and reduced. The cross-rank check (config_checksum) hashes the
// serialized form of exactly this struct, so a new field is checked as soon
// as it exists (options.cc refuses to compile until it is serialized).
struct SharedOptions {
  // Model and optimisation.
  std::string model = "cnn";           // mlp | cnn | resnet
  std::string optimizer = "adam";      // adam | sgd
  double lr = 0.0;                     // 0 = the optimizer's default
  double momentum = 0.9;               // sgd only
  std::string lr_schedule = "cosine";  // cosine (to 0 over the run) | constant
  std::size_t epochs = 1;
  std::size_t global_batch = kDefaultGlobalBatch;
  std::size_t max_steps = 0;  // stop after this many steps in all (0 = no limit)
  std::uint64_t seed = 0;

  // Data: "fashion-mnist", "synthetic", a directory holding the four
  // MNIST-format idx files under their usual names, or one holding
  // train_x.npy, train_y.npy (and optionally test_x.npy, test_y.npy); or the
  // paths (four idx files, or two or four .npy files: inputs, targets).
  std::string data = "fashion-mnist";
  std::string train_images, train_labels, test_images, test_labels;
  std::size_t synthetic_train = kDefaultSyntheticTrain;
  std::size_t synthetic_test = kDefaultSyntheticTest;
  // What is minimised: cross-entropy | mse | bce-with-logits ("" = by the
  // targets: cross-entropy for class labels, mse for float targets).
  std::string loss;
  // Also evaluate the test set every this many steps (0 = at epoch ends only),
  // for curves of the metric against wall-clock time.
  std::size_t eval_every = 0;

  // Allocation: policy, shares, profile steps, local-batch bounds (one value,
  // handed to the policy as is; the placement is discovered at the start).
  alloc::AllocOptions alloc;

  // Heterogeneity emulation: worker i sleeps c*(1/s_i - 1) after computing
  // (c: the host's real compute; emulated device time is divided by s_i).
  std::vector<double> speeds;
  // Time-varying emulation: from global step `step` on, `rank` runs at `speed`.
  struct SpeedChange {
    std::size_t rank = 0;
    std::size_t step = 0;
    double speed = 1.0;
  };
  std::vector<SpeedChange> slowdowns;
  // An emulated accelerator on top of the real compute: each step also
  // sleeps b x sample_cost_ms / s_i, inside forward and backward where a
  // device would hold the host (train/device_time.h), so compute is dominated
  // by a steady, known per-sample cost and the host's cores stay free.
  double sample_cost_ms = 0.0;

  // The gradient reduction.
  std::string allreduce = "auto";       // auto | gloo | ring | halving-doubling
  double bucket_mb = kDefaultBucketMb;  // gradients are reduced in calls of at most this size
  bool overlap = true;  // reduce each bucket as soon as backward has produced it (train/reducer.h)

  // Checkpoints (train/checkpoint.h). The directory must be visible to every
  // worker of a resumed run (one machine, or a shared file system).
  std::string checkpoint_dir;        // write checkpoints here ("" = none)
  std::size_t checkpoint_every = 0;  // steps between checkpoints (0 = at the end of each epoch only)
  std::string resume_dir;            // continue from the checkpoint in this directory
};

// What each process decides for itself: where it writes, how it runs here.
struct ProcessOptions {
  std::string metrics_path;
  std::string trace_path;  // Chrome trace-event timeline, written by rank 0 (record/trace.h)
  int threads = 0;         // torch intra-op threads; 0 = cores / local workers
  // This worker's hardware kind (a device's model, a machine type): the
  // adaptive policy never plans workers of different kinds as one unit
  // (alloc::Placement::kind). "" = not said.
  std::string kind;
  double timeout_seconds = kDefaultTimeoutSeconds;
  bool quiet = false;
  std::string log_level = "info";  // error | warn | info | debug (--quiet: error)
  // For tests of the cursor: each rank appends "epoch step index..." lines
  // for the samples it trains on to PREFIX.rankR (PREFIX.attemptA.rankR in
  // restart A > 0, so a restarted group keeps the dead one's log).
  std::string sample_log;
  // The launcher's restart count (TORCHELASTIC_RESTART_COUNT): labels the
  // metrics and the sample log. Process-local: set from the environment.
  int restart_count = 0;
};

// Everything a training run is configured by.
struct TrainOptions : SharedOptions, ProcessOptions {};

// The shared options as one JSON line (every field, by name).
std::string serialize(const SharedOptions& o);

// A checksum of serialize(o): what every worker must agree on.
std::uint32_t config_checksum(const SharedOptions& o);

// --model names a TorchScript file (it ends in .pt) rather than a built-in model.
bool is_script_model(const std::string& model);

// Whether --model names the model (a built-in or a TorchScript file) or the
// caller of the C++ API hands one in (train/trainer.h), whose name then only
// labels the metrics.
enum class ModelSource { kNamed, kGiven };

// Throws UsageError naming the first problem found, for a world of
// `world_size` workers.
void validate(const TrainOptions& o, int world_size, ModelSource source = ModelSource::kNamed);

// Parses --slowdown "RANK@STEP:SPEED,..." (throws UsageError).
std::vector<TrainOptions::SpeedChange> parse_slowdowns(const std::string& text);

// The emulated speed of `rank` at global step `step` (1 = real speed).
double emulated_speed(const TrainOptions& o, std::size_t rank, std::size_t step);

// --bucket-mb in float elements (at least 1).
std::size_t bucket_elements(const TrainOptions& o);

// The optimizer's learning rate after defaults are applied.
double effective_lr(const TrainOptions& o);

// The learning rate at `step` of a run of `total_steps` steps: the same
// function of the step on every worker, so the schedule keeps the N-worker
// run equal to the 1-worker run.
double scheduled_lr(const TrainOptions& o, std::size_t step, std::size_t total_steps);

}  // namespace hetrain::train
