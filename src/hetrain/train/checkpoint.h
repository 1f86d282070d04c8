// Checkpoints: everything a run needs to continue exactly where it was, with
// the same or a different set of workers.
//
// Terms: the global cursor is (epoch, step): the next step of that epoch's
// seeded permutation. It does not depend on the number of workers, since
// every step takes the next B samples of the permutation whatever the split;
// so a run resumed on N' workers trains on exactly the samples the
// interrupted epoch had not used yet, each once.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"

namespace hetrain::train {

inline constexpr const char* kCheckpointFile = "checkpoint.pt";

struct CheckpointMeta {
  std::string model;                       // the built-in model's name
  std::string optimizer;                   // adam | sgd
  std::uint64_t seed = 0;                  // permutation and initialisation seed
  std::size_t global_batch = 0;            // B
  std::size_t train_samples = 0;           // size of the training set
  std::size_t epoch = 0;                   // the epoch to continue (0-based)
  std::size_t step = 0;                    // its next step
  std::size_t total_steps = 0;             // steps done in all (the lr schedule's clock)
  int world_size = 0;                      // workers of the run that wrote it
  std::vector<alloc::WorkerModel> workers;  // the allocation core's learned models, by rank
};

// Writes model, optimizer and `meta` to DIR/checkpoint.pt atomically
// (temporary file, fsync, rename): a crash mid-write leaves the previous
// checkpoint intact. Creates DIR. Throws DataError.
void save_checkpoint(const std::string& dir, const CheckpointMeta& meta, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer);

// Loads DIR/checkpoint.pt into `model` and `optimizer` and returns its meta.
// Throws DataError for a missing or corrupt file, or one written for another
// model, seed, global batch or data set (the cursor would not mean the same).
CheckpointMeta load_checkpoint(const std::string& dir, const CheckpointMeta& expect, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer);

}  // namespace hetrain::train
