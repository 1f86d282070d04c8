#include "hetrain/train/trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "hetrain/alloc/policy.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/data/synthetic.h"
#include "hetrain/train/checkpoint.h"
#include "hetrain/train/model.h"
#include "hetrain/train/objective.h"
#include "hetrain/train/observers.h"
#include "hetrain/train/placement.h"
#include "hetrain/train/prefetch.h"
#include "hetrain/train/step.h"
#include "hetrain/train/tensors.h"

namespace hetrain::train {
namespace {

// A split that just moved may move again: the prefetcher then reads this
// fraction of the slice (at least kMinMarginRows) more on each side.
constexpr std::size_t kMarginDivisor = 4;
constexpr std::size_t kMinMarginRows = 8;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainOptions& o, Model& model) {
  if (o.optimizer == "sgd") {
    return std::make_unique<torch::optim::SGD>(model.parameters(),
                                               torch::optim::SGDOptions(effective_lr(o)).momentum(o.momentum));
  }
  return std::make_unique<torch::optim::Adam>(model.parameters(), torch::optim::AdamOptions(effective_lr(o)));
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

// What the metrics call the data: the --data value, or the training inputs' path.
std::string data_name(const TrainOptions& o) { return o.train_images.empty() ? o.data : o.train_images; }

// A split the caller owns, as a DataSet (the caller keeps it alive).
DataSet borrow(const data::DataSplit& split, const TrainOptions& o) {
  return image_dataset(std::shared_ptr<const data::DataSplit>(&split, [](const data::DataSplit*) {}), data_name(o));
}

alloc::PolicyConfig policy_config(const TrainOptions& o, std::size_t workers,
                                  const std::vector<alloc::WorkerModel>& known) {
  return alloc::PolicyConfig{o.alloc, workers, o.global_batch, known};
}

// The metrics' description of the run, before any step.
record::RunMetrics run_header(const TrainOptions& o, int world_size, const CheckpointMeta& cursor,
                              const DataSet& data, const LossKind& loss) {
  record::RunMetrics m;
  m.world_size = world_size;
  m.model = o.model;
  m.policy = o.alloc.name;
  m.allreduce = o.allreduce;
  m.data = data.name;
  m.loss = loss_name(loss);
  m.metric = data.test ? metric_name(loss) : "";
  m.global_batch = o.global_batch;
  m.speeds = o.speeds;
  m.restarts = o.restart_count;
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
  Training(const TrainOptions& o, const DataSet& data, comm::Group& group, Model& model,
           const EpochCallback& on_epoch, const StepCallback& on_step);
  TrainResult run();

 private:
  void run_epoch(std::size_t epoch);
  StepOutcome run_step(std::size_t epoch, std::size_t step, std::span<const std::uint32_t> permutation);
  void read_ahead(const StepPlan& plan, std::span<const std::uint32_t> permutation);
  double evaluate_now();  // the test metric (0 without a test set); a collective
  void record_eval(double metric);
  CheckpointMeta resume_or_start();
  void add_observers(const StepCallback& on_step);
  void stop_here(const Cursor& at);

  const TrainOptions& o_;
  comm::Group& group_;
  Model& model_;
  const EpochCallback& on_epoch_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::size_t train_n_, steps_in_epoch_, planned_steps_;
  CheckpointMeta cursor_;  // where this run starts, and what its checkpoints are checked against
  std::unique_ptr<alloc::Policy> policy_;
  const DataSet& data_;
  LossKind loss_;
  Prefetcher prefetch_;
  std::vector<std::size_t> last_split_;  // the previous step's, to see the split move
  double eval_loss_sum_ = 0.0;           // training loss since the last evaluation ...
  std::size_t eval_steps_ = 0;           // ... over this many steps
  TrainResult result_;
  Clock::time_point start_ = Clock::now();
  RunClock run_clock_{start_};  // the curves' seconds: evaluation time left out
  std::unique_ptr<StepRunner> runner_;
  std::vector<std::unique_ptr<StepObserver>> observers_;
  TraceRecorder* trace_ = nullptr;  // owned by observers_
  std::size_t total_steps_ = 0;
  bool stop_ = false;
};

Training::Training(const TrainOptions& o, const DataSet& data, comm::Group& group, Model& model,
                   const EpochCallback& on_epoch, const StepCallback& on_step)
    : o_(o),
      group_(group),
      model_(model),
      on_epoch_(on_epoch),
      optimizer_(make_optimizer(o, model)),
      train_n_(data.train->size()),
      steps_in_epoch_(data::steps_per_epoch(train_n_, o.global_batch)),
      data_(data),
      loss_(resolve_loss(o.loss, data, model)),
      prefetch_(*data.train, o.timeout_seconds) {
  planned_steps_ = o.epochs * steps_in_epoch_;
  if (o.max_steps != 0) planned_steps_ = std::min(o.max_steps, planned_steps_);
  cursor_ = resume_or_start();
  total_steps_ = cursor_.total_steps;
  const auto n = static_cast<std::size_t>(group.size());
  alloc::PolicyConfig pc = policy_config(o, n, cursor_.workers);
  if (o.alloc.name != "equal") pc.placement = discover_placement(group, torch::get_num_threads(), o.kind);
  policy_ = alloc::make_policy(pc);
  runner_ = std::make_unique<StepRunner>(o, model, *optimizer_, group, *policy_, planned_steps_, loss_);
  result_.metrics = run_header(o, group.size(), cursor_, data, loss_);
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
  if (!o_.sample_log.empty()) observers_.push_back(std::make_unique<SampleLog>(o_.sample_log, rank, o_.restart_count));
  observers_.push_back(std::make_unique<StepLog>(group_, result_.metrics.steps, run_clock_));
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

// This rank's samples come from the prefetcher; while the step runs, it
// reads what the next step will probably need.
StepOutcome Training::run_step(std::size_t epoch, std::size_t step, std::span<const std::uint32_t> permutation) {
  const StepPlan plan = runner_->slice(epoch, step, total_steps_, permutation);
  for (auto& ob : observers_) ob->before_compute(plan);
  const auto wait_begin = Clock::now();
  const Batch slice = prefetch_.take(plan.global_step, permutation, plan.first + plan.slice.begin, plan.slice.count);
  const double input_seconds = seconds_since(wait_begin);
  read_ahead(plan, permutation);
  StepOutcome out = runner_->run(plan, slice);
  out.input_seconds = input_seconds;
  last_split_ = plan.split;
  return out;
}

// The next steps' slices under today's split (the policy decides the next
// split only after this step), with a margin while the split is moving; the
// step after those only hinted, so a slow disk has one step more.
void Training::read_ahead(const StepPlan& plan, std::span<const std::uint32_t> permutation) {
  const bool moving = plan.split != last_split_;
  std::vector<Prefetcher::Range> steps;
  std::pair<std::size_t, std::size_t> hint{0, 0};
  for (std::size_t d = 1; d <= Prefetcher::kDepth + 1; ++d) {
    if (plan.step + d >= steps_in_epoch_) break;  // the next epoch's order is not drawn yet
    if (o_.max_steps != 0 && plan.global_step + d >= o_.max_steps) break;
    const StepPlan next = runner_->slice(plan.epoch, plan.step + d, plan.global_step + d, permutation);
    const std::size_t begin = next.first + next.slice.begin, end = begin + next.slice.count;
    if (d > Prefetcher::kDepth) {
      hint = {begin, end};
      break;
    }
    const std::size_t margin = moving ? std::max(kMinMarginRows, next.slice.count / kMarginDivisor) : 0;
    steps.push_back({next.global_step, begin - std::min(margin, begin - next.first),
                     std::min(next.first + next.batch, end + margin)});
  }
  prefetch_.ahead(permutation, steps, hint);
}

double Training::evaluate_now() {
  runner_->forget_last_step();  // the evaluation is not part of the next step
  const auto begin = Clock::now();
  const double metric = data_.test ? evaluate(model_, *data_.test, loss_, group_) : 0.0;
  run_clock_.paused_seconds += seconds_since(begin);
  return metric;
}

void Training::record_eval(double metric) {
  record::EvalRecord e;
  e.step = total_steps_;
  e.seconds = run_clock_.at(Clock::now());
  e.train_loss = eval_steps_ > 0 ? eval_loss_sum_ / static_cast<double>(eval_steps_) : 0.0;
  e.test_metric = metric;
  result_.metrics.evals.push_back(e);
  eval_loss_sum_ = 0.0;
  eval_steps_ = 0;
}

// Some rank was asked to stop (the vote rode in this step's allreduce):
// every rank is here after the same step. The barrier holds the others
// until rank 0's checkpoint is on disk, so any rank's exit means it is.
void Training::stop_here(const Cursor& at) {
  for (auto& ob : observers_) ob->stopped(at);
  group_.barrier();
  stop_ = true;
  result_.stopped = true;
  result_.stopped_at_step = at.total_steps;
}

void Training::run_epoch(std::size_t epoch) {
  const auto epoch_start = Clock::now();
  const auto permutation = data::epoch_permutation(train_n_, o_.seed, epoch);
  double loss_sum = 0.0;
  std::size_t epoch_steps = 0;
  Cursor at{epoch, epoch == cursor_.epoch ? cursor_.step : 0, total_steps_};
  runner_->forget_last_step();  // evaluation and checkpoints came between
  for (std::size_t step = at.next_step; step < steps_in_epoch_; ++step) {
    if (o_.max_steps != 0 && total_steps_ >= o_.max_steps) {
      stop_ = true;
      break;
    }
    const StepOutcome outcome = run_step(epoch, step, permutation);
    loss_sum += outcome.all.loss;
    eval_loss_sum_ += outcome.all.loss;
    ++eval_steps_;
    ++epoch_steps;
    at = {epoch, step + 1, ++total_steps_};
    for (auto& ob : observers_) ob->after_step(outcome, at);
    if (outcome.all.stop) return stop_here(at);
    if (o_.eval_every != 0 && total_steps_ % o_.eval_every == 0) record_eval(evaluate_now());
  }
  const double train_seconds = seconds_since(epoch_start);
  for (auto& ob : observers_) ob->end_epoch(at, epoch_steps);
  record::EpochRecord rec;
  rec.train_seconds = train_seconds;
  rec.epoch = epoch + 1;
  rec.train_loss = epoch_steps > 0 ? loss_sum / static_cast<double>(epoch_steps) : 0.0;
  const bool evaluated = !result_.metrics.evals.empty() && result_.metrics.evals.back().step == total_steps_;
  rec.test_metric = evaluated ? result_.metrics.evals.back().test_metric : evaluate_now();
  if (!evaluated) record_eval(rec.test_metric);
  if (loss_ == LossKind::kCrossEntropy) rec.test_accuracy = rec.test_metric;
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

void resume_after_restart(TrainOptions& o, int restart_count) {
  o.restart_count = restart_count;
  if (restart_count == 0 || o.checkpoint_dir.empty()) return;
  if (has_checkpoint(o.checkpoint_dir)) o.resume_dir = o.checkpoint_dir;
}

bool has_checkpoint(const std::string& dir) {
  return !dir.empty() && std::filesystem::exists(std::filesystem::path(dir) / kCheckpointFile);
}

data::DataSplit load_data(const TrainOptions& o) {
  if (!o.train_images.empty()) {
    return {data::read_idx_pair(o.train_images, o.train_labels), data::read_idx_pair(o.test_images, o.test_labels)};
  }
  if (o.data == "synthetic") return data::make_synthetic(o.synthetic_train, o.synthetic_test, o.seed);
  return data::load_mnist_dir(o.data == "fashion-mnist" ? std::string(data::kFashionMnistDir) : o.data);
}

DataSet load_dataset(const TrainOptions& o) {
  if (data::is_npy_path(o.train_images)) {
    return npy_dataset(data::open_npy(o.train_images, o.train_labels, o.test_images, o.test_labels),
                       data_name(o));
  }
  if (o.train_images.empty() && o.data != "synthetic" && o.data != "fashion-mnist" && data::is_npy_dir(o.data)) {
    return npy_dataset(data::open_npy_dir(o.data), data_name(o));
  }
  auto split = std::make_shared<const data::DataSplit>(load_data(o));
  check_data(*split);
  return image_dataset(std::move(split), data_name(o));
}

void set_compute_threads(int threads) {
  HETRAIN_ENFORCE_LT(0, threads);
  torch::set_num_threads(threads);
}

TrainResult train(const TrainOptions& o, const data::DataSplit& data, comm::Group& group,
                  const EpochCallback& on_epoch, const StepCallback& on_step) {
  validate(o, group.size());
  check_data(data);
  return train(o, borrow(data, o), group, on_epoch, on_step);
}

TrainResult train(const TrainOptions& o, const DataSet& data, comm::Group& group, const EpochCallback& on_epoch,
                  const StepCallback& on_step) {
  validate(o, group.size());
  // The outputs follow the targets alone; --loss is checked with the model
  // (a TorchScript model may bring its own loss).
  auto model = make_model(o.model, data.input_shape, model_outputs(resolve_loss("", data), data), o.seed);
  return train(o, data, group, model, on_epoch, on_step);
}

TrainResult train(const TrainOptions& o, const data::DataSplit& data, comm::Group& group,
                  const std::shared_ptr<Model>& model, const EpochCallback& on_epoch, const StepCallback& on_step) {
  check_data(data);
  return train(o, borrow(data, o), group, model, on_epoch, on_step);
}

TrainResult train(const TrainOptions& o, const DataSet& data, comm::Group& group, const std::shared_ptr<Model>& model,
                  const EpochCallback& on_epoch, const StepCallback& on_step) {
  HETRAIN_ENFORCE_EQ(model != nullptr, true);
  // The model is given: o.model is only its name in the metrics.
  validate(o, group.size(), ModelSource::kGiven);
  check_same_config(o, group);  // before any collective whose size depends on the options
  // Rank 0's parameters are the truth, as in DDP.
  auto params = flatten_parameters(*model);
  group.broadcast(std::span<float>(params), 0);
  load_parameters(*model, params);
  return Training(o, data, group, *model, on_epoch, on_step).run();
}

}  // namespace hetrain::train
