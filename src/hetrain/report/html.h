// `hetrain report`: one self-contained HTML page (inline CSS and SVG, no
// script, no fetch) of one or more runs' metrics.
//
// Every chart is an <svg class="plot"> with a stable id, which the headless
// browser test (tests/report/render_test.py) looks for:
//   split-K       local batch of every worker over the steps of run K (lines)
//   timeline-K    a dozen steps from the middle of run K, per worker compute
//                 then wait (a Gantt chart: fast workers idling show in it)
//   time-K        compute vs wait seconds per worker of run K (stacked bars)
//   loss-K        training loss per epoch of run K
//   accuracy-K    the test metric (accuracy, RMSE, ...) per epoch of run K
// and for every report the wall-clock curves with their time-to-target
// lines (report/curves.h): wallclock-metric, wallclock-loss
// and, given two runs or more, the comparison of their policies:
//   compare-time, compare-efficiency, compare-accuracy (bars, one per run).
// K counts from 0 in the order the runs were given.
#pragma once

#include <string>
#include <vector>

#include "hetrain/record/run.h"
#include "hetrain/report/curves.h"

namespace hetrain::report {

// A line with more points than this is averaged over buckets of steps first:
// the page stays small and the lines readable for long runs.
inline constexpr std::size_t kMaxLinePoints = 600;

// The ids of the charts a report of `runs` runs holds, in page order.
std::vector<std::string> plot_ids(std::size_t runs);

// The page. `runs` must not be empty.
std::string render_html(const std::vector<record::Run>& runs, const Targets& targets = {});

// Loads every file (DataError on the first bad one), renders, and writes
// `output` atomically.
void write_report(const std::vector<std::string>& inputs, const std::string& output, const Targets& targets = {});

}  // namespace hetrain::report
