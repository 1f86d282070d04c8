#include "hetrain/record/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hetrain/common/error.h"

namespace hetrain::record {

double balance_efficiency(const std::vector<StepRecord>& steps) {
  double busy = 0.0, slowest = 0.0;
  std::size_t n = 0;
  for (const auto& s : steps) {
    if (s.compute_seconds.empty()) continue;
    n = s.compute_seconds.size();
    for (double c : s.compute_seconds) busy += c;
    slowest += *std::max_element(s.compute_seconds.begin(), s.compute_seconds.end());
  }
  if (n == 0 || slowest <= 0.0) return 1.0;
  return busy / (static_cast<double>(n) * slowest);
}

std::string to_json(const RunMetrics& m) {
  using nlohmann::json;
  json doc;
  doc["world_size"] = m.world_size;
  doc["model"] = m.model;
  doc["policy"] = m.policy;
  doc["allreduce"] = m.allreduce;
  doc["data"] = m.data;
  doc["global_batch"] = m.global_batch;
  doc["speeds"] = m.speeds;
  doc["wall_seconds"] = m.wall_seconds;
  doc["balance_efficiency"] = balance_efficiency(m.steps);
  doc["policy_moves"] = m.policy_moves;
  doc["policy_reverts"] = m.policy_reverts;
  if (m.restarts > 0) doc["restarts"] = m.restarts;
  if (m.resumed_world_size > 0) {
    doc["resumed_from"] = {
        {"epoch", m.resumed_epoch}, {"step", m.resumed_step}, {"world_size", m.resumed_world_size}};
  }

  doc["loss"] = m.loss;
  doc["metric"] = m.metric;
  // The test metric under a key that names it: test_accuracy, test_rmse, ...
  const std::string metric_key = "test_" + m.metric;
  json epochs = json::array();
  for (const auto& e : m.epochs) {
    json rec = {{"epoch", e.epoch}, {"seconds", e.seconds}, {"train_seconds", e.train_seconds},
                {"train_loss", e.train_loss}};
    if (!m.metric.empty()) rec[metric_key] = e.test_metric;
    epochs.push_back(std::move(rec));
  }
  doc["epochs"] = std::move(epochs);
  json evals = json::array();
  for (const auto& e : m.evals) {
    json rec = {{"step", e.step}, {"seconds", e.seconds}, {"train_loss", e.train_loss}};
    if (!m.metric.empty()) rec[metric_key] = e.test_metric;
    evals.push_back(std::move(rec));
  }
  doc["evals"] = std::move(evals);

  const auto n = static_cast<std::size_t>(m.world_size);
  std::vector<std::size_t> samples(n, 0);
  std::vector<double> compute(n, 0.0), wait(n, 0.0), hidden(n, 0.0), input(n, 0.0);
  json allocation = json::array(), step_compute = json::array(), step_wait = json::array();
  json step_input = json::array(), step_loss = json::array(), step_end = json::array();
  for (const auto& s : m.steps) {
    for (std::size_t i = 0; i < n && i < s.local_batch.size(); ++i) {
      samples[i] += s.local_batch[i];
      compute[i] += s.compute_seconds[i];
      wait[i] += s.wait_seconds[i];
      if (i < s.hidden_seconds.size()) hidden[i] += s.hidden_seconds[i];
      if (i < s.input_seconds.size()) input[i] += s.input_seconds[i];
    }
    allocation.push_back(s.local_batch);
    step_compute.push_back(s.compute_seconds);
    step_wait.push_back(s.wait_seconds);
    step_input.push_back(s.input_seconds);
    step_loss.push_back(s.loss);
    step_end.push_back(s.end_seconds);
  }
  json workers = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    workers.push_back({{"rank", i},
                       {"samples", samples[i]},
                       {"compute_seconds", compute[i]},
                       {"wait_seconds", wait[i]},
                       {"hidden_comm_seconds", hidden[i]},
                       {"input_wait_seconds", input[i]}});
  }
  doc["workers"] = std::move(workers);
  // Per step, index = rank: the split, the compute, the wait and the input
  // wait; and per step the global loss and when it ended (wall-clock curves).
  doc["allocation"] = std::move(allocation);
  doc["steps"] = {{"compute_seconds", std::move(step_compute)}, {"wait_seconds", std::move(step_wait)},
                  {"input_wait_seconds", std::move(step_input)}, {"loss", std::move(step_loss)},
                  {"end_seconds", std::move(step_end)}};
  return doc.dump() + "\n";
}

}  // namespace hetrain::record
