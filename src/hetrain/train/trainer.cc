#include "hetrain/train/trainer.h"

#include <fmt/format.h>

#include <chrono>

#include "hetrain/alloc/policy.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/data/synthetic.h"
#include "hetrain/train/checkpoint.h"
#include "hetrain/train/model.h"
#include "hetrain/train/observers.h"
#include "hetrain/train/step.h"
#include "hetrain/train/tensors.h"

namespace hetrain::train {
namespace {

constexpr std::int64_t kEvalBatch = 1024;  // samples per evaluation forward

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainOptions& o, Model& model) {
  if (o.optimizer == "sgd") {
    return std::make_unique<torch::optim::SGD>(model.parameters(),
                                               torch::optim::SGDOptions(effective_lr(o)).momentum(o.momentum));
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

// Workers started with different options would train different things (or
// deadlock on different step counts): every rank compares its options'
// checksum with every other's before the first step.
void check_same_config(const TrainOptions& o, comm::Group& group) {
  const double mine = static_cast<double>(config_checksum(o));
  const auto all = group.allgather(std::span<const double>(&mine, 1));
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] != all[0]) {
      throw UsageError(fmt::format("rank {} was started with a different configuration than rank 0 "
                                   "(flags, config file or data must match on every worker)",
                                   r));
    }
  }
}

void check_data(const data::DataSplit& data) {
  if (data.train.size() == 0 || data.test.size() == 0) throw DataError("the data set is empty");
  if (data.train.rows != data.test.rows || data.train.cols != data.test.cols) {
    throw DataError(fmt::format("train images are {}x{} but test images are {}x{}", data.train.rows,
                                data.train.cols, data.test.rows, data.test.cols));
  }
}

alloc::PolicyConfig policy_config(const TrainOptions& o, std::size_t workers,
                                  const std::vector<alloc::WorkerModel>& known) {
  alloc::PolicyConfig pc;
  pc.name = o.policy;
  pc.shares = o.shares;
  pc.profile_steps = o.profile_steps;
  pc.workers = workers;
  pc.global_batch = o.global_batch;
  pc.bounds.min_local = o.min_local_batch;
  if (o.max_local_batch != 0) pc.bounds.max_local = o.max_local_batch;
  pc.known = known;
  return pc;
}

// The metrics' description of the run, before any step.
record::RunMetrics run_header(const TrainOptions& o, int world_size, const CheckpointMeta& cursor) {
  record::RunMetrics m;
  m.world_size = world_size;
  m.model = o.model;
  m.policy = o.policy;
  m.allreduce = o.allreduce;
  m.data = o.train_images.empty() ? o.data : o.train_images;
  m.global_batch = o.global_batch;
  m.speeds = o.speeds;
  if (!o.resume_dir.empty()) {
    m.resumed_world_size = cursor.world_size;
    m.resumed_epoch = cursor.epoch;
    m.resumed_step = cursor.step;
  }
  return m;
}

// One run on this rank: the state that lives across steps and epochs.
class Training {
 public:
  Training(const TrainOptions& o, const data::DataSplit& data, comm::Group& group, Model& model,
           const EpochCallback& on_epoch, const StepCallback& on_step);
  TrainResult run();

 private:
  void run_epoch(std::size_t epoch);
  CheckpointMeta resume_or_start();
  void add_observers(const StepCallback& on_step);

  const TrainOptions& o_;
  comm::Group& group_;
  Model& model_;
  const EpochCallback& on_epoch_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::size_t train_n_, steps_in_epoch_, planned_steps_;
  CheckpointMeta cursor_;  // where this run starts, and what its checkpoints are checked against
  std::unique_ptr<alloc::Policy> policy_;
  Tensors train_, test_;
  TrainResult result_;
  Clock::time_point start_ = Clock::now();
  std::unique_ptr<StepRunner> runner_;
  std::vector<std::unique_ptr<StepObserver>> observers_;
  TraceRecorder* trace_ = nullptr;  // owned by observers_
  std::size_t total_steps_ = 0;
  bool stop_ = false;
};

Training::Training(const TrainOptions& o, const data::DataSplit& data, comm::Group& group, Model& model,
                   const EpochCallback& on_epoch, const StepCallback& on_step)
    : o_(o),
      group_(group),
      model_(model),
      on_epoch_(on_epoch),
      optimizer_(make_optimizer(o, model)),
      train_n_(data.train.size()),
      steps_in_epoch_(data::steps_per_epoch(train_n_, o.global_batch)),
      train_(as_tensors(data.train)),
      test_(as_tensors(data.test)) {
  planned_steps_ = o.epochs * steps_in_epoch_;
  if (o.max_steps != 0) planned_steps_ = std::min(o.max_steps, planned_steps_);
  cursor_ = resume_or_start();
  total_steps_ = cursor_.total_steps;
  const auto n = static_cast<std::size_t>(group.size());
  policy_ = alloc::make_policy(policy_config(o, n, cursor_.workers));
  runner_ = std::make_unique<StepRunner>(o, model, *optimizer_, group, *policy_, planned_steps_);
  result_.metrics = run_header(o, group.size(), cursor_);
  add_observers(on_step);
}

CheckpointMeta Training::resume_or_start() {
  CheckpointMeta c;
  c.model = o_.model;
  c.optimizer = o_.optimizer;
  c.seed = o_.seed;
  c.global_batch = o_.global_batch;
  c.train_samples = train_n_;
  if (!o_.resume_dir.empty()) c = load_checkpoint(o_.resume_dir, c, model_, *optimizer_);
  return c;
}

void Training::add_observers(const StepCallback& on_step) {
  const auto rank = static_cast<std::size_t>(group_.rank());
  if (!o_.sample_log.empty()) observers_.push_back(std::make_unique<SampleLog>(o_.sample_log, rank));
  observers_.push_back(std::make_unique<StepLog>(group_, result_.metrics.steps));
  if (!o_.trace_path.empty()) {
    auto trace = std::make_unique<TraceRecorder>(group_, o_.trace_path, start_);
    trace_ = trace.get();
    observers_.push_back(std::move(trace));
  }
  if (!o_.checkpoint_dir.empty() && rank == 0) {
    observers_.push_back(std::make_unique<Checkpointer>(o_, cursor_, steps_in_epoch_, group_.size(), model_,
                                                        *optimizer_, *policy_));
  }
  if (on_step) observers_.push_back(std::make_unique<ProgressFeed>(on_step, planned_steps_, o_.epochs));
}

void Training::run_epoch(std::size_t epoch) {
  const auto epoch_start = Clock::now();
  const auto permutation = data::epoch_permutation(train_n_, o_.seed, epoch);
  const auto order = torch::tensor(std::vector<std::int64_t>(permutation.begin(), permutation.end()));
  double loss_sum = 0.0;
  std::size_t epoch_steps = 0;
  Cursor at{epoch, epoch == cursor_.epoch ? cursor_.step : 0, total_steps_};
  runner_->forget_last_step();  // evaluation and checkpoints came between
  for (std::size_t step = at.next_step; step < steps_in_epoch_; ++step) {
    if (o_.max_steps != 0 && total_steps_ >= o_.max_steps) {
      stop_ = true;
      break;
    }
    const StepPlan plan = runner_->slice(epoch, step, total_steps_, permutation);
    for (auto& ob : observers_) ob->before_compute(plan);
    const StepOutcome outcome = runner_->run(plan, train_, order);
    loss_sum += outcome.all.loss;
    ++epoch_steps;
    at = {epoch, step + 1, ++total_steps_};
    for (auto& ob : observers_) ob->after_step(outcome, at);
  }
  const double train_seconds = seconds_since(epoch_start);
  for (auto& ob : observers_) ob->end_epoch(at, epoch_steps);
  record::EpochRecord rec;
  rec.train_seconds = train_seconds;
  rec.epoch = epoch + 1;
  rec.train_loss = epoch_steps > 0 ? loss_sum / static_cast<double>(epoch_steps) : 0.0;
  rec.test_accuracy = evaluate(model_, test_, group_);
  rec.seconds = seconds_since(epoch_start);
  result_.metrics.epochs.push_back(rec);
  if (on_epoch_) on_epoch_(rec, result_.metrics);
}

TrainResult Training::run() {
  for (std::size_t epoch = cursor_.epoch; epoch < o_.epochs && !stop_; ++epoch) run_epoch(epoch);
  record::RunMetrics& m = result_.metrics;
  m.wall_seconds = seconds_since(start_);
  const alloc::PolicyStats stats = policy_->stats();
  m.policy_moves = stats.moves;
  m.policy_reverts = stats.reverts;
  if (trace_ != nullptr) trace_->close();
  result_.parameters = flatten_parameters(model_);
  return std::move(result_);
}

}  // namespace

data::DataSplit load_data(const TrainOptions& o) {
  if (!o.train_images.empty()) {
    return {data::read_idx_pair(o.train_images, o.train_labels), data::read_idx_pair(o.test_images, o.test_labels)};
  }
  if (o.data == "synthetic") return data::make_synthetic(o.synthetic_train, o.synthetic_test, o.seed);
  return data::load_mnist_dir(o.data == "fashion-mnist" ? std::string(data::kFashionMnistDir) : o.data);
}

void set_compute_threads(int threads) {
  HETRAIN_ENFORCE_LT(0, threads);
  torch::set_num_threads(threads);
}

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
  validate(o, group.size(), ModelSource::kGiven);
  check_same_config(o, group);  // before any collective whose size depends on the options
  check_data(data);
  // Rank 0's parameters are the truth, as in DDP.
  auto params = flatten_parameters(*model);
  group.broadcast(std::span<float>(params), 0);
  load_parameters(*model, params);
  return Training(o, data, group, *model, on_epoch, on_step).run();
}

}  // namespace hetrain::train
