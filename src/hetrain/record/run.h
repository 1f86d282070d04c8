// One run's metrics file (`--metrics`, see README "Metrics") as the report
// reads it back: validated once here, so the charts can trust every size.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hetrain/record/metrics.h"

namespace hetrain::record {

struct Run {
  std::string label;  // what the report calls it: the file name without .json
  int world_size = 1;
  std::string model, policy, data, allreduce;
  std::size_t global_batch = 0;
  std::vector<double> speeds;  // empty: no emulation
  double wall_seconds = 0.0;
  double balance_efficiency = 1.0;
  std::vector<record::EpochRecord> epochs;
  std::vector<std::size_t> worker_samples;           // per rank
  std::vector<double> worker_compute;                // seconds, per rank
  std::vector<double> worker_wait;                   // seconds, per rank
  std::vector<std::vector<std::size_t>> allocation;  // per step, per rank
  std::vector<std::vector<double>> step_compute;     // seconds, per step, per rank (may be empty)
  std::vector<std::vector<double>> step_wait;        // seconds, per step, per rank (may be empty)
  // Wall-clock curves (may be empty: older files): per step the global
  // training loss and when it ended; the evaluations of the test set.
  std::vector<double> step_loss, step_end;
  std::vector<record::EvalRecord> evals;
  std::string loss = "cross-entropy";
  std::string metric = "accuracy";  // test_<metric> in the file; "" = no test set

  double train_seconds() const;   // sum over epochs: the step loops alone
  double final_accuracy() const;  // the last epoch's test metric; 0 without epochs
};

// Parses a metrics document; `source` names it in errors. Throws DataError
// (one line) for text that is not JSON or not a hetrain metrics file.
Run parse_run(const std::string& text, const std::string& source);

// Reads and parses a metrics file. Throws DataError.
Run load_run(const std::string& path);

}  // namespace hetrain::record
