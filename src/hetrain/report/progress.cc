#include "hetrain/report/progress.h"

#include <fmt/format.h>

#include <cmath>

#include "hetrain/common/error.h"

namespace hetrain::report {
namespace {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

LogLevel parse_log_level(const std::string& name) {
  if (name == "error") return LogLevel::kError;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "info") return LogLevel::kInfo;
  if (name == "debug") return LogLevel::kDebug;
  throw UsageError(fmt::format("--log-level {}: expected error, warn, info or debug", name));
}

Progress::Progress(std::ostream& out, bool tty, LogLevel level) : out_(out), tty_(tty), level_(level) {}

std::string Progress::describe(const StepProgress& p, double samples_per_second, double eta_seconds,
                               bool bar) {
  const double done =
      p.planned_steps > 0 ? static_cast<double>(p.step) / static_cast<double>(p.planned_steps) : 0;
  std::string text = fmt::format("epoch {}/{}  step {}/{}  ", p.epoch, p.epochs, p.step, p.planned_steps);
  if (bar) {
    const auto filled = static_cast<std::size_t>(std::min(1.0, done) * static_cast<double>(kBarWidth));
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "[" + std::string&&.
    text += '[';
    text.append(filled, '#').append(kBarWidth - filled, '.');
    text += "]  ";
  }
  std::size_t total = 0;
  for (auto b : p.split) total += b;
  std::string shares;
  for (std::size_t i = 0; i < p.split.size(); ++i) {
    const double pct = total > 0 ? 100.0 * static_cast<double>(p.split[i]) / static_cast<double>(total) : 0.0;
    shares += fmt::format("{}{:.0f}", i == 0 ? "" : "/", pct);
  }
  return text + fmt::format("{:3.0f}%  {:.0f} samples/s  ETA {}  loss {:.4f}  split {}%", 100.0 * done,
                            samples_per_second, clock_text(eta_seconds), p.loss, shares);
}

void Progress::step(const StepProgress& p, double now) {
  samples_ += static_cast<double>(p.samples);
  if (level_ < LogLevel::kInfo) return;
  const bool last = p.step >= p.planned_steps;
  const double period = tty_ ? kBarRedrawSeconds : (level_ >= LogLevel::kDebug ? 0.0 : kLineEverySeconds);
  if (!last && now - last_print_ < period) return;
  last_print_ = now;
  const double rate = now > 0 ? samples_ / now : 0.0;
  const double per_step = p.step > 0 ? now / static_cast<double>(p.step) : 0.0;
  const double eta = per_step * static_cast<double>(p.planned_steps - std::min(p.step, p.planned_steps));
  if (tty_) {
    // \r and clear-to-end-of-line: redraw in place.
    out_ << '\r' << describe(p, rate, eta, true) << "\x1b[K" << std::flush;
    open_line_ = true;
  } else {
    out_ << describe(p, rate, eta, false) << '\n' << std::flush;
  }
}

void Progress::break_line() {
  if (!open_line_) return;
  out_ << '\n' << std::flush;
  open_line_ = false;
}

}  // namespace hetrain::report
