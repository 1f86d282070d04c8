#include "hetrain/record/run.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrain/common/error.h"

namespace hetrain::record {
namespace {

using nlohmann::json;

// nlohmann's messages start with "[json.exception.type_error.302] ": keep
// what follows, which says what was wrong.
std::string json_reason(const std::exception& e) {
  std::string what = e.what();
  if (const auto close = what.find("] ");
      what.rfind("[json.exception", 0) == 0 && close != std::string::npos) {
    what = what.substr(close + 2);
  }
  return what.substr(0, what.find('\n'));
}

class NotMetrics : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const json& field(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) throw NotMetrics(fmt::format("no '{}'", key));
  return obj.at(key);
}

std::string optional_string(const json& doc, const char* key) {
  return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : std::string();
}

void read_workers(const json& doc, Run& r) {
  const auto& workers = field(doc, "workers");
  if (!workers.is_array() || workers.size() != static_cast<std::size_t>(r.world_size)) {
    throw NotMetrics(fmt::format("'workers' must list {} workers (world_size)", r.world_size));
  }
  for (const auto& w : workers) {
    r.worker_samples.push_back(field(w, "samples").get<std::size_t>());
    r.worker_compute.push_back(field(w, "compute_seconds").get<double>());
    r.worker_wait.push_back(field(w, "wait_seconds").get<double>());
  }
}

void read_epochs(const json& doc, Run& r) {
  const auto& epochs = field(doc, "epochs");
  if (!epochs.is_array()) throw NotMetrics("'epochs' is not a list");
  const std::string key = "test_" + r.metric;
  for (const auto& e : epochs) {
    record::EpochRecord rec;
    rec.epoch = field(e, "epoch").get<std::size_t>();
    rec.seconds = field(e, "seconds").get<double>();
    rec.train_seconds = field(e, "train_seconds").get<double>();
    rec.train_loss = field(e, "train_loss").get<double>();
    if (!r.metric.empty()) rec.test_metric = field(e, key.c_str()).get<double>();
    if (r.metric == "accuracy") rec.test_accuracy = rec.test_metric;
    r.epochs.push_back(rec);
  }
}

// "evals": optional (older files); test_<metric> in each unless no test set.
void read_evals(const json& doc, Run& r) {
  if (!doc.contains("evals")) return;
  const auto& evals = doc["evals"];
  if (!evals.is_array()) throw NotMetrics("'evals' is not a list");
  const std::string key = "test_" + r.metric;
  for (const auto& e : evals) {
    record::EvalRecord rec;
    rec.step = field(e, "step").get<std::size_t>();
    rec.seconds = field(e, "seconds").get<double>();
    rec.train_loss = field(e, "train_loss").get<double>();
    if (!r.metric.empty()) rec.test_metric = field(e, key.c_str()).get<double>();
    r.evals.push_back(rec);
  }
}

void read_allocation(const json& doc, Run& r) {
  const auto& allocation = field(doc, "allocation");
  if (!allocation.is_array()) throw NotMetrics("'allocation' is not a list");
  for (std::size_t s = 0; s < allocation.size(); ++s) {
    auto split = allocation[s].get<std::vector<std::size_t>>();
    if (split.size() != static_cast<std::size_t>(r.world_size)) {
      throw NotMetrics(
          fmt::format("step {} of 'allocation' has {} workers, not {}", s, split.size(), r.world_size));
    }
    r.allocation.push_back(std::move(split));
  }
}

// steps.compute_seconds / steps.wait_seconds: optional (older files), but
// when present one row per step of the allocation, N values each.
void read_step_times(const json& doc, Run& r) {
  if (!doc.contains("steps")) return;
  const auto& steps = doc["steps"];
  for (const auto& [key, out] :
       {std::pair{"compute_seconds", &r.step_compute}, {"wait_seconds", &r.step_wait}}) {
    *out = field(steps, key).get<std::vector<std::vector<double>>>();
    if (out->size() != r.allocation.size()) {
      throw NotMetrics(
          fmt::format("'steps.{}' has {} steps, 'allocation' {}", key, out->size(), r.allocation.size()));
    }
    for (const auto& row : *out) {
      if (row.size() != static_cast<std::size_t>(r.world_size)) {
        throw NotMetrics(
            fmt::format("a row of 'steps.{}' has {} workers, not {}", key, row.size(), r.world_size));
      }
    }
  }
  for (const auto& [key, out] : {std::pair{"loss", &r.step_loss}, {"end_seconds", &r.step_end}}) {
    if (!steps.contains(key)) continue;
    *out = steps[key].get<std::vector<double>>();
    if (out->size() != r.allocation.size()) {
      throw NotMetrics(
          fmt::format("'steps.{}' has {} steps, 'allocation' {}", key, out->size(), r.allocation.size()));
    }
  }
}

}  // namespace

double Run::train_seconds() const {
  double t = 0.0;
  for (const auto& e : epochs) t += e.train_seconds;
  return t;
}

double Run::final_accuracy() const { return epochs.empty() ? 0.0 : epochs.back().test_metric; }

Run parse_run(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw DataError(fmt::format("{} is not JSON: {}", source, json_reason(e)));
  }
  Run r;
  r.label = std::filesystem::path(source).stem().string();
  try {
    if (!doc.is_object()) throw NotMetrics("not a JSON object");
    r.world_size = field(doc, "world_size").get<int>();
    if (r.world_size < 1) throw NotMetrics("'world_size' is below 1");
    r.model = optional_string(doc, "model");
    r.policy = optional_string(doc, "policy");
    r.data = optional_string(doc, "data");
    r.allreduce = optional_string(doc, "allreduce");
    if (doc.contains("global_batch")) r.global_batch = doc["global_batch"].get<std::size_t>();
    if (doc.contains("speeds")) r.speeds = doc["speeds"].get<std::vector<double>>();
    r.wall_seconds = field(doc, "wall_seconds").get<double>();
    r.balance_efficiency = field(doc, "balance_efficiency").get<double>();
    if (doc.contains("loss")) r.loss = field(doc, "loss").get<std::string>();
    if (doc.contains("metric")) r.metric = field(doc, "metric").get<std::string>();
    read_workers(doc, r);
    read_epochs(doc, r);
    read_evals(doc, r);
    read_allocation(doc, r);
    read_step_times(doc, r);
  } catch (const NotMetrics& e) {
    throw DataError(fmt::format("{} is not a hetrain metrics file: {}", source, e.what()));
  } catch (const json::exception& e) {
    throw DataError(fmt::format("{} is not a hetrain metrics file: {}", source, json_reason(e)));
  }
  return r;
}

Run load_run(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw DataError(fmt::format("cannot read {}: a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw DataError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  return parse_run(ss.str(), path);
}

}  // namespace hetrain::record
