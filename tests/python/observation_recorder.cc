// The C++ trainer's step (train::StepRunner, the code `hetrain run` trains
// with) on Fashion-MNIST, its policy wrapped so that every Observation it is
// handed is written as one JSON line: what tests/python/observation_test.py
// compares with the Observations hetrain.torch's Balancer hands the same
// policy on the same job. Run as N processes with torchrun's variables.
//
//   observation_recorder OUT.jsonl STEPS GLOBAL_BATCH SAMPLE_COST_MS SPEED,SPEED,...
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/comm/env.h"
#include "hetrain/comm/gloo/gloo_group.h"
#include "hetrain/common/error.h"
#include "hetrain/data/cursor.h"
#include "hetrain/train/examples.h"
#include "hetrain/train/model.h"
#include "hetrain/train/objective.h"
#include "hetrain/train/options.h"
#include "hetrain/train/step.h"
#include "hetrain/train/trainer.h"

namespace {

namespace ht = hetrain;
constexpr auto kTimeout = std::chrono::seconds(120);

// Hands every Observation on to the real policy, after writing it down.
class RecordingPolicy final : public ht::alloc::Policy {
 public:
  RecordingPolicy(std::unique_ptr<ht::alloc::Policy> inner, const std::string& path)
      : inner_(std::move(inner)), out_(path) {}
  std::vector<std::size_t> split() const override { return inner_->split(); }
  void observe(const ht::alloc::Observation& o) override {
    out_ << fmt::format(
        "{{\"local_batch\": [{}], \"compute_seconds\": [{}], \"cpu_seconds\": [{}], \"wait_seconds\": [{}], "
        "\"previous_step_seconds\": {}}}\n",
        fmt::join(o.local_batch, ", "), fmt::join(o.compute_seconds, ", "), fmt::join(o.cpu_seconds, ", "),
        fmt::join(o.wait_seconds, ", "), o.previous_step_seconds);
    out_.flush();
    inner_->observe(o);
  }

 private:
  std::unique_ptr<ht::alloc::Policy> inner_;
  std::ofstream out_;
};

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::stod(item));
  return v;
}

int run(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: observation_recorder OUT.jsonl STEPS GLOBAL_BATCH SAMPLE_COST_MS SPEEDS\n");
    return 2;
  }
  const ht::comm::WorldInfo world = ht::comm::world_from_env(ht::comm::process_env());
  ht::comm::Group group = ht::comm::connect_gloo(world, kTimeout);
  const auto n = static_cast<std::size_t>(group.size());
  ht::train::TrainOptions o;
  o.model = "mlp";
  o.alloc.name = "equal";
  o.optimizer = "sgd";
  o.global_batch = std::stoul(argv[3]);
  o.sample_cost_ms = std::stod(argv[4]);
  o.speeds = parse_list(argv[5]);
  ht::train::validate(o, group.size());
  ht::train::set_compute_threads(1);
  const ht::train::DataSet data = ht::train::load_dataset(o);
  auto model = ht::train::make_model(o.model, data.input_shape, static_cast<std::int64_t>(data.num_classes), o.seed);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(ht::train::effective_lr(o)));
  ht::alloc::PolicyConfig pc;
  pc.workers = n;
  pc.global_batch = o.global_batch;
  RecordingPolicy policy(ht::alloc::make_policy(pc), argv[1] + std::string(".") + std::to_string(group.rank()));
  const std::size_t steps = std::stoul(argv[2]);
  ht::train::StepRunner runner(o, *model, optimizer, group, policy, steps, ht::train::LossKind::kCrossEntropy);
  const auto order = ht::data::epoch_permutation(data.train->size(), o.seed, 0);
  for (std::size_t step = 0; step < steps; ++step) {
    const ht::train::StepPlan plan = runner.slice(0, step, step, order);
    runner.run(plan, data.train->gather(plan.rows));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "observation_recorder: %s\n", ht::first_line(e.what()).c_str());
    return 1;
  }
}
