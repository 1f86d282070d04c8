// One finished step as the trainer reports it to whoever draws progress
// (the CLI's bar on rank 0): a record, so train/ need not know report/.
#pragma once

#include <cstddef>
#include <vector>

namespace hetrain::record {

struct StepProgress {
  std::size_t step = 0;           // global steps done so far (1-based)
  std::size_t planned_steps = 0;  // in the whole run
  std::size_t epoch = 0;          // 1-based
  std::size_t epochs = 0;
  std::size_t samples = 0;         // in this step's global batch
  double loss = 0.0;               // this step's global-batch loss
  std::vector<std::size_t> split;  // b_i of this step
};

}  // namespace hetrain::record
