// The synchronous data-parallel training loop, exact under any split.
//
// Terms: B is the global batch (fixed), b_i the local batch of rank i
// (sum b_i = B), the global cursor the position in the epoch's seeded
// permutation. Each step takes the next B samples of the permutation and cuts
// them into contiguous slices b_0..b_{N-1}; rank i computes the mean loss of
// its slice, scales it by b_i/B, back-propagates, and a SUM allreduce of the
// gradients gives every rank the gradient of the mean loss over the whole
// global batch. Every rank then takes the same optimizer step as a single
// worker would on the same batch, whatever the b_i.
//
// The step itself, phase by phase, is train/step.h; what rides with the
// gradients is train/telemetry.h; metrics, trace, checkpoints, the sample
// log and progress watch it as observers (train/observers.h).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "hetrain/comm/group.h"
#include "hetrain/data/idx.h"
#include "hetrain/record/step_progress.h"
#include "hetrain/record/metrics.h"
#include "hetrain/train/dataset.h"
#include "hetrain/train/options.h"

namespace hetrain::train {

struct TrainResult {
  record::RunMetrics metrics;
  std::vector<float> parameters;  // final parameters, flattened in module order
  // Stopped on request (train/stop.h) before the planned end: every rank
  // stopped after the same step, and --checkpoint DIR holds that step.
  bool stopped = false;
  std::size_t stopped_at_step = 0;  // steps done in all when it stopped
};

// Called on every rank after each epoch (the CLI prints on rank 0).
using EpochCallback = std::function<void(const record::EpochRecord&, const record::RunMetrics&)>;
// Called on every rank after each step (the CLI draws progress on rank 0).
using StepCallback = std::function<void(const record::StepProgress&)>;

// Runs the whole training on this rank. `data` must be the same on every
// rank. Throws UsageError, DataError or CommError.
TrainResult train(const TrainOptions& options, const data::DataSplit& data, comm::Group& group,
                  const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});

// The C++ API (see examples/custom_model.cc): the same training with a model
// of your own, a torch::nn::Module deriving from train::Model, and any data
// set in a DataSplit. `options.model` is then only the model's name in the
// metrics. Every rank must build the same architecture; rank 0's initial
// parameters are broadcast to all.
class Model;
TrainResult train(const TrainOptions& options, const data::DataSplit& data, comm::Group& group,
                  const std::shared_ptr<Model>& model, const EpochCallback& on_epoch = {},
                  const StepCallback& on_step = {});

// A group restarted by its launcher (restart_count > 0: torchrun
// --max_restarts, hetrain run --max-restarts) continues from the checkpoint
// in --checkpoint DIR where there is one (and from the start, or --resume,
// where none was written yet). Every rank decides the same: the dead group's
// workers are all stopped before the new group starts, and DIR must be
// visible to every worker (as for --resume).
void resume_after_restart(TrainOptions& options, int restart_count);

// Whether DIR holds a checkpoint (written atomically: one that exists is complete).
bool has_checkpoint(const std::string& dir);

// Loads the data set the options name (Fashion-MNIST by default).
data::DataSplit load_data(const TrainOptions& options);

// The same for any data the options name, .npy included (memory-mapped:
// train/examples.h). Throws DataError naming the file and what is wrong.
DataSet load_dataset(const TrainOptions& options);

// Training on a DataSet (idx, synthetic or .npy), the loss by --loss or the
// targets; the first builds the model --model names for the data's shape.
TrainResult train(const TrainOptions& options, const DataSet& data, comm::Group& group,
                  const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});
TrainResult train(const TrainOptions& options, const DataSet& data, comm::Group& group,
                  const std::shared_ptr<Model>& model, const EpochCallback& on_epoch = {},
                  const StepCallback& on_step = {});

// Sets torch's intra-op threads for this process (workers sharing a machine
// must split its cores, or they fight each other).
void set_compute_threads(int threads);

}  // namespace hetrain::train
