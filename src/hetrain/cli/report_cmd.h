// `hetrain report RUN.json [RUN2.json ...] -o report.html`: the subcommand's
// flags and its action, kept out of args.cc (which only hooks it in).
#pragma once

#include <string>
#include <vector>

#include "hetrain/report/curves.h"

namespace CLI {
class App;
}

namespace hetrain::cli {

struct ReportOptions {
  std::vector<std::string> inputs;  // metrics files
  std::string output = "report.html";
  report::Targets targets;  // --target-accuracy / --target-rmse, --target-loss
};

// Adds the `report` subcommand to `app`, filling `o` when parsed.
CLI::App* add_report_command(CLI::App& app, ReportOptions& o);

// Writes the report; returns the exit code. Throws DataError/UsageError.
int run_report(const ReportOptions& o);

}  // namespace hetrain::cli
