// Training against wall-clock time: each run's training loss and test
// metric over the seconds since it started, overlaid, with when each run
// first reached a target, and the sentence a user of a mixed cluster asks
// for first: "adaptive reached 0.85 test accuracy in 41.2 s, equal in
// 97.5 s". Charts (ids for tests/report/time_to_target_test.py):
//   wallclock-loss     training loss (a moving mean over steps) vs seconds
//   wallclock-metric   the test metric (--eval-every points) vs seconds
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetrain/record/run.h"

namespace hetrain::report {

// Steps in the moving mean of the training loss: one batch's loss is noise.
inline constexpr std::size_t kLossWindowSteps = 20;

struct Targets {
  std::optional<double> metric;  // --target-accuracy / --target-rmse: unset = the best every run reached
  std::optional<double> loss;    // --target-loss: unset = the lowest loss every run reached
};

// A run's curves as (seconds since its start, value) points; older files
// without per-step times fall back to one point per epoch.
struct Curve {
  std::vector<double> seconds, values;
};
Curve loss_curve(const record::Run& r);    // the moving mean of the training loss
Curve metric_curve(const record::Run& r);  // the test metric at each evaluation

// The first time `c` reaches `target` (>= it, or <= it when lower is
// better); nothing if it never does.
std::optional<double> time_to_reach(const Curve& c, double target, bool lower_is_better);

// "test accuracy", "test RMSE", "test mean per-label accuracy".
std::string metric_label(const std::string& metric);

// The section: the two charts and a sentence per target.
std::string wallclock_section(const std::vector<record::Run>& runs, const Targets& targets);

}  // namespace hetrain::report
