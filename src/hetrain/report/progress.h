// Live progress on rank 0: a bar redrawn in place on a terminal, plain lines
// now and then otherwise (CI logs, files), in the spirit of tqdm.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "hetrain/record/step_progress.h"

namespace hetrain::report {

// How much a run prints (--log-level; --quiet is kError).
enum class LogLevel { kError, kWarn, kInfo, kDebug };

// "error" | "warn" | "info" | "debug"; throws UsageError otherwise.
LogLevel parse_log_level(const std::string& name);

using record::StepProgress;

// Redraw interval on a terminal, and the period of plain lines elsewhere.
inline constexpr double kBarRedrawSeconds = 0.1;
inline constexpr double kLineEverySeconds = 10.0;
inline constexpr std::size_t kBarWidth = 24;  // characters

class Progress {
 public:
  // `tty`: redraw one line with '\r'; otherwise print a line every
  // kLineEverySeconds (at kDebug: every step).
  Progress(std::ostream& out, bool tty, LogLevel level);

  // `now`: seconds since the run started (passed in, so tests need no clock).
  void step(const StepProgress& p, double now);

  // Ends the bar's line, so the next output starts on a fresh one.
  void break_line();

  // "epoch 1/3  step 120/702  [#####.....]  17%  1534 samples/s  ETA 0:45  loss 0.4123  split 31/31/31/8%"
  static std::string describe(const StepProgress& p, double samples_per_second, double eta_seconds, bool bar);

 private:
  std::ostream& out_;
  bool tty_;
  LogLevel level_;
  double last_print_ = -1e300;
  double samples_ = 0.0;
  bool open_line_ = false;  // a bar is on screen without its newline
};

}  // namespace hetrain::report
