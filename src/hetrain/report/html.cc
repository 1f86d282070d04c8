#include "hetrain/report/html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/record/metrics.h"
#include "hetrain/report/svg.h"

namespace hetrain::report {
namespace {

constexpr const char* kComputeColor = "#4e79a7";
constexpr const char* kWaitColor = "#e15759";
constexpr std::size_t kTimelineSteps = 12;  // steps the timeline shows, from the middle of the run
constexpr double kMillisPerSecond = 1e3;

// Inline style: the page must look right with no file beside it.
constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 24px 0 8px; }
h3 { font-size: 16px; margin: 0 0 4px; } p.meta { color: #555; font-size: 13px; margin: 0 0 8px; }
table { border-collapse: collapse; font-size: 13px; margin-bottom: 12px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.grid3 { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 12px; }
.runs { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 20px; }
.run { border: 1px solid #e4e4e4; border-radius: 6px; padding: 12px; }
svg.plot { width: 100%; height: auto; display: block; margin-bottom: 8px; }
svg text { font-size: 11px; fill: #333; } svg text.title { font-size: 14px; font-weight: 600; }
svg text.label { font-size: 12px; } svg text.value { font-size: 11px; fill: #111; }
svg .grid { stroke: #e6e6e6; } svg .axis { stroke: #555; }
svg path.line { fill: none; stroke-width: 1.8; } svg text.empty { fill: #999; font-size: 14px; }
)";

std::string worker_name(const record::Run& r, std::size_t i) {
  if (i < r.speeds.size() && r.speeds[i] != 1.0) return fmt::format("rank {} (x{:g})", i, r.speeds[i]);
  return fmt::format("rank {}", i);
}

// One series per worker: its local batch per step, averaged over buckets
// of steps when there are more than kMaxLinePoints steps.
std::vector<Series> split_series(const record::Run& r) {
  const std::size_t steps = r.allocation.size();
  const std::size_t bucket = std::max<std::size_t>(1, (steps + kMaxLinePoints - 1) / kMaxLinePoints);
  std::vector<Series> out;
  for (std::size_t w = 0; w < static_cast<std::size_t>(r.world_size); ++w) {
    Series s{worker_name(r, w), series_color(w), {}, {}};
    for (std::size_t b = 0; b < steps; b += bucket) {
      const std::size_t end = std::min(steps, b + bucket);
      double sum = 0.0;
      for (std::size_t k = b; k < end; ++k) sum += static_cast<double>(r.allocation[k][w]);
      s.x.push_back(static_cast<double>(b + end - 1) / 2.0 + 1.0);  // 1-based step at the bucket's centre
      s.y.push_back(sum / static_cast<double>(end - b));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The steps in the middle of the run (past the adaptive policy's warm-up),
// laid end to end: each worker's compute then its wait, each step as long as
// its longest worker. Time outside compute and allreduce is left out.
std::string timeline_chart(const record::Run& r, std::size_t k) {
  const std::size_t n = r.step_compute.size();
  const std::size_t first = n > kTimelineSteps ? (n - kTimelineSteps) / 2 : 0;
  const std::size_t last = std::min(n, first + kTimelineSteps);
  std::vector<TimelineRow> rows(static_cast<std::size_t>(r.world_size));
  for (std::size_t w = 0; w < rows.size(); ++w) rows[w].name = fmt::format("rank {}", w);
  double t = 0.0;
  for (std::size_t s = first; s < last; ++s) {
    double longest = 0.0;
    for (std::size_t w = 0; w < rows.size(); ++w) {
      const double c = r.step_compute[s][w] * kMillisPerSecond, wt = r.step_wait[s][w] * kMillisPerSecond;
      rows[w].spans.push_back(
          {t, t + c, kComputeColor,
           fmt::format("step {}, rank {}: compute {:.1f} ms, b={}", s + 1, w, c, r.allocation[s][w])});
      rows[w].spans.push_back(
          {t + c, t + c + wt, kWaitColor, fmt::format("step {}, rank {}: wait {:.1f} ms", s + 1, w, wt)});
      longest = std::max(longest, c + wt);
    }
    t += longest;
  }
  const std::string title =
      n == 0 ? std::string("Timeline") : fmt::format("Timeline of steps {}-{}", first + 1, last);
  return timeline(fmt::format("timeline-{}", k), {title, "milliseconds", ""}, rows,
                  {{"compute", kComputeColor}, {"wait", kWaitColor}});
}

Series epoch_series(const record::Run& r, bool metric) {
  Series s{metric ? metric_label(r.metric) : "training loss", series_color(metric ? 4 : 1), {}, {}};
  for (const auto& e : r.epochs) {
    if (metric && r.metric.empty()) break;  // no test set
    s.x.push_back(static_cast<double>(e.epoch));
    s.y.push_back(metric ? e.test_metric : e.train_loss);
  }
  return s;
}

std::string meta_line(const record::Run& r) {
  std::string speeds = "none";
  if (!r.speeds.empty()) speeds = fmt::format("{}", fmt::join(r.speeds, ","));
  return fmt::format(
      "policy <b>{}</b> &middot; {} workers &middot; model {} &middot; B={} &middot; speeds {} &middot; "
      "allreduce {} &middot; data {} &middot; {} steps",
      xml_escape(r.policy), r.world_size, xml_escape(r.model), r.global_batch, xml_escape(speeds),
      xml_escape(r.allreduce), xml_escape(r.data), r.allocation.size());
}

std::string run_section(const record::Run& r, std::size_t k) {
  std::string s =
      fmt::format("<section class=\"run\" id=\"run-{}\">\n<h3>{}</h3>\n<p class=\"meta\">{}</p>\n", k,
                  xml_escape(r.label), meta_line(r));
  s += fmt::format(
      "<p class=\"meta\">training {:.2f} s (wall {:.2f} s) &middot; balance efficiency {:.3f} &middot; "
      "{} {:.4f}</p>\n",
      r.train_seconds(), r.wall_seconds, r.balance_efficiency, metric_label(r.metric), r.final_accuracy());
  s += line_chart(fmt::format("split-{}", k),
                  {"Split per worker over steps", "step", "local batch b_i (samples)"}, split_series(r),
                  {.y_from_zero = true});
  s += timeline_chart(r, k);
  std::vector<std::string> workers;
  for (std::size_t w = 0; w < static_cast<std::size_t>(r.world_size); ++w)
    workers.push_back(worker_name(r, w));
  s += stacked_bars(
      fmt::format("time-{}", k), {"Compute vs wait per worker", "worker", "seconds"}, workers,
      {{"compute", kComputeColor, r.worker_compute}, {"wait (allreduce)", kWaitColor, r.worker_wait}});
  s += line_chart(fmt::format("loss-{}", k), {"Training loss per epoch", "epoch", "loss"},
                  {epoch_series(r, false)}, {.y_from_zero = true, .x_integer = true});
  s += line_chart(fmt::format("accuracy-{}", k),
                  {fmt::format("{} per epoch", metric_label(r.metric)), "epoch", metric_label(r.metric)},
                  {epoch_series(r, true)}, {.x_integer = true});
  return s + "</section>\n";
}

std::string comparison(const std::vector<record::Run>& runs) {
  const double base = runs.front().train_seconds();
  std::string s =
      "<h2>Policies side by side</h2>\n<table id=\"compare-table\">\n<tr><th>run</th><th>policy</th>"
      "<th>workers</th><th>speeds</th><th>B</th><th>training s</th>"
      "<th>time vs first</th><th>wall s</th><th>balance efficiency</th><th>test accuracy</th>"
      "<th>final loss</th></tr>\n";
  std::vector<std::string> labels, colors;
  std::vector<double> times, efficiency, accuracy;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const record::Run& r = runs[k];
    const double t = r.train_seconds();
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td>"
        "<td>{:.2f}</td><td>{:.3f}</td><td>{:.4f}</td><td>{:.4f}</td></tr>\n",
        xml_escape(r.label), xml_escape(r.policy), r.world_size,
        r.speeds.empty() ? std::string("none") : fmt::format("{}", fmt::join(r.speeds, ",")), r.global_batch,
        t, base > 0.0 ? fmt::format("{:.2f}x", t / base) : std::string("-"), r.wall_seconds,
        r.balance_efficiency, r.final_accuracy(), r.epochs.empty() ? 0.0 : r.epochs.back().train_loss);
    labels.push_back(r.label);
    colors.push_back(series_color(k));
    times.push_back(t);
    efficiency.push_back(r.balance_efficiency);
    accuracy.push_back(r.final_accuracy());
  }
  s += "</table>\n<div class=\"grid3\">\n";
  s += bars("compare-time", {"Training time", "run", "seconds"}, labels, times, colors, 2);
  s += bars("compare-efficiency", {"Balance efficiency", "run", "efficiency (1 = nobody waits)"}, labels,
            efficiency, colors, 3);
  s += bars("compare-accuracy", {"Test accuracy", "run", "accuracy"}, labels, accuracy, colors, 4);
  return s + "</div>\n";
}

}  // namespace

std::vector<std::string> plot_ids(std::size_t runs) {
  std::vector<std::string> ids;
  if (runs > 1) ids = {"compare-time", "compare-efficiency", "compare-accuracy"};
  ids.insert(ids.end(), {"wallclock-metric", "wallclock-loss"});
  for (std::size_t k = 0; k < runs; ++k) {
    for (const char* kind : {"split", "timeline", "time", "loss", "accuracy"})
      ids.push_back(fmt::format("{}-{}", kind, k));
  }
  return ids;
}

std::string render_html(const std::vector<record::Run>& runs, const Targets& targets) {
  HETRAIN_ENFORCE_LT(0u, runs.size());
  std::vector<std::string> names;
  names.reserve(runs.size());
  for (const auto& r : runs) names.push_back(r.label);
  const std::string title = fmt::format("hetrain report: {}", fmt::join(names, " vs "));
  std::string s = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n"
      "<style>{1}</style>\n</head>\n<body>\n<h1>{0}</h1>\n"
      "<p class=\"meta\">Synchronous data-parallel training with a fixed global batch B split across "
      "workers. "
      "Wait is time blocked in the gradient allreduce: waiting for slower workers, plus the transfer.</p>\n",
      xml_escape(title), kStyle);
  if (runs.size() > 1) s += comparison(runs);
  s += wallclock_section(runs, targets);
  s += "<h2>Runs</h2>\n<div class=\"runs\">\n";
  for (std::size_t k = 0; k < runs.size(); ++k) s += run_section(runs[k], k);
  return s + "</div>\n</body>\n</html>\n";
}

void write_report(const std::vector<std::string>& inputs, const std::string& output, const Targets& targets) {
  if (inputs.empty()) throw UsageError("report: give at least one metrics file");
  std::vector<record::Run> runs;
  runs.reserve(inputs.size());
  for (const auto& path : inputs) runs.push_back(record::load_run(path));
  write_file_atomic(output, render_html(runs, targets));
}

}  // namespace hetrain::report
