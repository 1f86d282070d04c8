#include "hetrain/report/curves.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "hetrain/report/html.h"
#include "hetrain/report/svg.h"

namespace hetrain::report {
namespace {

constexpr const char* kTargetColor = "#888888";

// rmse, and "loss": a TorchScript model's own loss on the test set.
bool lower_is_better(const std::string& metric) { return metric == "rmse" || metric == "loss"; }

// The value every run reached: the worst of the runs' best values.
std::optional<double> common_best(const std::vector<Curve>& curves, bool lower_better) {
  std::optional<double> out;
  for (const Curve& c : curves) {
    if (c.values.empty()) return std::nullopt;  // a run without the curve reached nothing
    const double best = lower_better ? *std::min_element(c.values.begin(), c.values.end())
                                     : *std::max_element(c.values.begin(), c.values.end());
    out = !out ? best : (lower_better ? std::max(*out, best) : std::min(*out, best));
  }
  return out;
}

// Averaged over buckets of points when there are more than kMaxLinePoints.
Series thin(std::string name, std::string color, const Curve& c) {
  Series s{std::move(name), std::move(color), {}, {}};
  const std::size_t n = c.values.size();
  const std::size_t bucket = std::max<std::size_t>(1, (n + kMaxLinePoints - 1) / kMaxLinePoints);
  for (std::size_t b = 0; b < n; b += bucket) {
    const std::size_t end = std::min(n, b + bucket);
    s.x.push_back(c.seconds[end - 1]);
    double sum = 0.0;
    for (std::size_t k = b; k < end; ++k) sum += c.values[k];
    s.y.push_back(sum / static_cast<double>(end - b));
  }
  return s;
}

struct Reached {
  std::string label;
  std::optional<double> seconds;
  double last_seconds = 0.0;  // how long the run went on, for "did not reach it in ..."
};

// "adaptive reached 0.85 test accuracy in 41.2 s, equal in 97.5 s (2.37x as long)".
std::string sentence(std::vector<Reached> reached, const std::string& what) {
  std::stable_sort(reached.begin(), reached.end(), [](const Reached& a, const Reached& b) {
    return a.seconds.value_or(std::numeric_limits<double>::infinity()) <
           b.seconds.value_or(std::numeric_limits<double>::infinity());
  });
  std::string s;
  const std::optional<double> first = reached.front().seconds;
  for (std::size_t i = 0; i < reached.size(); ++i) {
    const Reached& r = reached[i];
    if (i > 0) s += ", ";
    if (!r.seconds) {
      s += fmt::format("{} did not reach it in {:.1f} s", xml_escape(r.label), r.last_seconds);
      continue;
    }
    s += i == 0 ? fmt::format("{} reached {} in {:.1f} s", xml_escape(r.label), what, *r.seconds)
                : fmt::format("{} in {:.1f} s", xml_escape(r.label), *r.seconds);
    if (i > 0 && first && *first > 0.0) s += fmt::format(" ({:.2f}x as long)", *r.seconds / *first);
  }
  return s;
}

// One chart: a line per run, the target as a grey line, a marker where each
// run first reached it; and the sentence under it.
std::string target_chart(const std::string& id, const ChartText& text, const std::vector<record::Run>& runs,
                         const std::vector<Curve>& curves, std::optional<double> target, bool lower_better,
                         const std::string& what) {
  std::vector<Series> series;
  std::vector<Reached> reached;
  double t_end = 0.0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    series.push_back(thin(runs[k].label, series_color(k), curves[k]));
    if (!curves[k].seconds.empty()) t_end = std::max(t_end, curves[k].seconds.back());
  }
  std::string line = "no target: a run has no points";
  if (target) {
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const auto t = time_to_reach(curves[k], *target, lower_better);
      reached.push_back({runs[k].label, t, curves[k].seconds.empty() ? 0.0 : curves[k].seconds.back()});
      if (t) series.push_back({fmt::format("{} reaches it", runs[k].label), series_color(k), {*t}, {*target}});
    }
    series.push_back({fmt::format("target {:.4g}", *target), kTargetColor, {0.0, t_end}, {*target, *target}});
    line = sentence(reached, fmt::format("{:.4g} {}", *target, what));
  }
  return line_chart(id, text, series, {.y_from_zero = !lower_better && what.find("loss") != std::string::npos}) +
         fmt::format("<p class=\"meta ttt\" id=\"{}-target\">{}</p>\n", id, line);
}

// One point per epoch, at the epochs' cumulative seconds: runs recorded
// without per-step losses or evaluations.
template <typename Value>
Curve per_epoch(const record::Run& r, Value value) {
  Curve c;
  double t = 0.0;
  for (const auto& e : r.epochs) {
    t += e.seconds;
    c.seconds.push_back(t);
    c.values.push_back(value(e));
  }
  return c;
}

}  // namespace

Curve loss_curve(const record::Run& r) {
  Curve c;
  if (r.step_loss.empty() || r.step_end.size() != r.step_loss.size()) {
    return per_epoch(r, [](const record::EpochRecord& e) { return e.train_loss; });
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < r.step_loss.size(); ++i) {
    sum += r.step_loss[i];
    if (i >= kLossWindowSteps) sum -= r.step_loss[i - kLossWindowSteps];
    c.seconds.push_back(r.step_end[i]);
    c.values.push_back(sum / static_cast<double>(std::min(i + 1, kLossWindowSteps)));
  }
  return c;
}

Curve metric_curve(const record::Run& r) {
  Curve c;
  if (r.metric.empty()) return c;
  if (r.evals.empty()) return per_epoch(r, [](const record::EpochRecord& e) { return e.test_metric; });
  for (const auto& e : r.evals) {
    c.seconds.push_back(e.seconds);
    c.values.push_back(e.test_metric);
  }
  return c;
}

std::optional<double> time_to_reach(const Curve& c, double target, bool lower_better) {
  for (std::size_t i = 0; i < c.values.size(); ++i) {
    if (lower_better ? c.values[i] <= target : c.values[i] >= target) return c.seconds[i];
  }
  return std::nullopt;
}

std::string metric_label(const std::string& metric) {
  if (metric == "accuracy") return "test accuracy";
  if (metric == "rmse") return "test RMSE";
  if (metric == "label_accuracy") return "test mean per-label accuracy";
  return metric.empty() ? "no test metric" : "test " + metric;
}

std::string wallclock_section(const std::vector<record::Run>& runs, const Targets& targets) {
  std::vector<Curve> losses, metrics;
  for (const auto& r : runs) {
    losses.push_back(loss_curve(r));
    metrics.push_back(metric_curve(r));
  }
  const std::string metric = runs.front().metric;
  const bool lower = lower_is_better(metric);
  const auto metric_target = targets.metric ? targets.metric : common_best(metrics, lower);
  const auto loss_target = targets.loss ? targets.loss : common_best(losses, true);
  const std::string label = metric_label(metric);
  std::string s = "<h2>Against wall-clock time</h2>\n<p class=\"meta\">Unset targets are the best value every run "
                  "reached (set them with --target-accuracy, --target-rmse, --target-loss).</p>\n"
                  "<div class=\"runs\">\n<div>\n";
  std::string title = label + " against wall-clock time";
  title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
  s += target_chart("wallclock-metric", {title, "seconds", label}, runs, metrics, metric_target, lower, label);
  s += "</div>\n<div>\n";
  s += target_chart("wallclock-loss",
                    {fmt::format("Training loss ({}-step mean) against wall-clock time", kLossWindowSteps),
                     "seconds", "training loss"},
                    runs, losses, loss_target, true, "training loss");
  return s + "</div>\n</div>\n";
}

}  // namespace hetrain::report
