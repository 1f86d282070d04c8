#include "hetrain/cli/report_cmd.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "hetrain/report/html.h"

namespace hetrain::cli {

CLI::App* add_report_command(CLI::App& app, ReportOptions& o) {
  auto* cmd = app.add_subcommand("report",
                                 "Turn metrics files (--metrics) into one self-contained HTML page of plots");
  cmd->add_option("runs", o.inputs, "Metrics JSON files; two or more add a side-by-side comparison")
      ->required();
  cmd->add_option("-o,--output", o.output, "The HTML file to write")->capture_default_str();
  cmd->add_option_function<double>(
      "--target-accuracy", [&o](double v) { o.targets.metric = v; },
      "Mark when each run first reached this test accuracy (default: the best every run reached)");
  cmd->add_option_function<double>(
      "--target-rmse", [&o](double v) { o.targets.metric = v; },
      "The same for a regression run's test RMSE (reached: at or below it)");
  cmd->add_option_function<double>("--target-loss", [&o](double v) { o.targets.loss = v; },
                                   "Mark when each run's training loss first fell to this");
  cmd->footer(R"(
Examples:
  hetrain report runs/demo-equal.json -o equal.html
  hetrain report runs/demo-equal.json runs/demo-static.json runs/demo-adaptive.json -o runs/report.html
  hetrain report runs/demo-equal.json runs/demo-adaptive.json --target-accuracy 0.7 -o runs/report.html
)");
  return cmd;
}

int run_report(const ReportOptions& o) {
  report::write_report(o.inputs, o.output, o.targets);
  fmt::print("report: {} run{} in {}\n", o.inputs.size(), o.inputs.size() == 1 ? "" : "s", o.output);
  return 0;
}

}  // namespace hetrain::cli
