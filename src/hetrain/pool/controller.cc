#include "hetrain/pool/controller.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/pool/job_script.h"
#include "hetrain/sched/pricing.h"

namespace hetrain::pool {
namespace {

constexpr int kStoppedExitCode = static_cast<int>(ExitCode::kStopped);
// A stop request that reached a job before its workers existed is lost:
// repeated this often until the job ends.
constexpr double kResignalSeconds = 5.0;
// Slurm's default KillWait: the time a preempted job gets before SIGKILL,
// and what a worker's stop takes well within (docs/errors.md). A job not
// gone by then is cancelled (scancel: SIGTERM, SIGKILL after KillWait).
constexpr double kStopDeadlineSeconds = 30.0;

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const QueuedJob* find(const std::vector<QueuedJob>& queue, const std::string& name) {
  for (const auto& q : queue)
    if (q.name == name) return &q;
  return nullptr;
}

// The exit code generation `g`'s script recorded; -1 when it wrote none.
int recorded_exit(const SpoolJob& s, int g) {
  std::ifstream in(exit_file(s, g));
  int code = -1;
  if (in) in >> code;
  return in ? code : -1;
}

std::string placement(const sched::Pool& pool, const sched::Allocation& x) {
  std::vector<std::string> parts;
  for (std::size_t t = 0; t < x.size(); ++t)
    if (x[t] > 0) parts.push_back(fmt::format("{} x{}", pool.types[t].name, x[t]));
  return parts.empty() ? "nothing" : fmt::format("{}", fmt::join(parts, " + "));
}

}  // namespace

Controller::Controller(const sched::Pool& pool, ControllerOptions options)
    : pool_(pool), o_(std::move(options)), slurm_(o_.command_timeout) {
  const auto dir = std::filesystem::path(o_.spool) / ".pool";
  std::filesystem::create_directories(dir / "logs");
  state_path_ = (dir / "state.json").string();
  log_dir_ = (dir / "logs").string();
  state_ = load_state(state_path_);
  if (state_.clock_origin == 0.0) state_.clock_origin = wall_seconds();
}

double Controller::now() const { return wall_seconds() - state_.clock_origin; }

void Controller::save() const { save_state(state_path_, state_); }

void Controller::say(const std::string& line) const {
  std::printf("pool: %7.1f s  %s\n", now(), line.c_str());
  std::fflush(stdout);
}

// New job files become waiting jobs; a file with an error is reported once
// and left out (fixing it makes it arrive).
bool Controller::read_spool(double now) {
  bool arrived = false;
  for (const auto& file : spool_files(o_.spool)) {
    if (refused_.count(file) != 0) continue;
    try {
      SpoolJob s = load_spool_job(file, pool_);
      const std::string name = s.job.name;
      if (jobs_.count(name) == 0 && state_.jobs.count(name) == 0) {
        state_.jobs[name].arrived = now;
        arrived = true;
        say(fmt::format("{} arrived ({})", name, file));
      }
      jobs_.insert_or_assign(name, std::move(s));
    } catch (const Error& e) {
      refused_.insert(file);
      say(fmt::format("refused {}: {}", file, e.what()));
    }
  }
  return arrived;
}

// Where Slurm no longer lists a job's latest generation, its exit file says
// how it ended: 0 done, 6 stopped with a checkpoint, else failed; none (it was
// cancelled or lost with its node) waits to run again from its checkpoint.
bool Controller::reconcile(const std::vector<QueuedJob>& queue, double now) {
  bool changed = false;
  for (auto& [name, js] : state_.jobs) {
    if (js.status != Status::kSubmitting && js.status != Status::kRunning && js.status != Status::kStopping)
      continue;
    if (jobs_.count(name) == 0) continue;  // its file is gone: leave it as it was
    if (const QueuedJob* q = find(queue, slurm_name(name, js.generation))) {
      if (js.status == Status::kSubmitting) js.status = Status::kRunning, js.slurm_id = q->id, changed = true;
      continue;
    }
    const int code = recorded_exit(jobs_.at(name), js.generation);
    if (code < 0 && js.status == Status::kSubmitting) continue;  // never reached Slurm: act submits it
    const bool stopping = js.status == Status::kStopping;
    js.exit_code = code;
    js.started = true;
    js.allocation.clear();
    js.status = after_exit(code, stopping);
    stop_since_.erase(name);
    if (js.status == Status::kDone) js.ended = now;
    say(fmt::format("{} (Slurm job {}) ended: {}", name, js.slurm_id,
                    code == 0                       ? "done"
                    : code == kStoppedExitCode      ? "stopped; it will resume from its last checkpoint"
                    : code < 0                      ? "gone without an exit code; it will resume"
                    : js.status == Status::kWaiting ? fmt::format("exit code {} while stopping; it will resume "
                                                                  "from its last checkpoint", code)
                                                    : fmt::format("failed, exit code {}", code)));
    changed = true;
  }
  if (changed) save();
  return changed;
}

// The planner's allocation for every job waiting or running.
void Controller::replan(double now) {
  std::vector<sched::Job> jobs;
  std::vector<sched::ActiveJob> active;
  std::vector<std::string> names;
  for (const auto& [name, js] : state_.jobs) {
    if (jobs_.count(name) == 0 || (js.status != Status::kWaiting && js.status != Status::kRunning)) continue;
    sched::ActiveJob a;
    a.job = jobs.size();
    a.remaining_steps = static_cast<double>(jobs_.at(name).job.steps);  // progress is not read back (yet)
    a.current = js.status == Status::kRunning ? js.allocation : sched::Allocation(pool_.types.size(), 0);
    a.started = js.started;
    jobs.push_back(jobs_.at(name).job);
    active.push_back(a);
    names.push_back(name);
  }
  last_plan_ = now;
  target_.clear();
  if (active.empty()) return;
  const sched::Pricer pricer(pool_, jobs);
  const sched::RoundPlan plan = sched::plan_round(pricer, active, o_.plan);
  for (std::size_t i = 0; i < names.size(); ++i) target_[names[i]] = plan.allocation[i];
}

void Controller::submit(const std::string& name, JobState& js) {
  const SpoolJob& s = jobs_.at(name);
  const auto script = std::filesystem::path(log_dir_) / fmt::format("{}.{}.sh", name, js.generation);
  write_file_atomic(script.string(), job_script(s, pool_, o_.hetrain, js.generation));
  std::filesystem::permissions(script, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
  js.slurm_id = slurm_.submit(sbatch_args(s, pool_, js.allocation, js.generation, log_dir_), script.string());
  if (o_.crash_after == "sbatch") std::_Exit(kCrashExitCode);
  js.status = Status::kRunning;
  save();
  say(fmt::format("{} submitted on {} as Slurm job {} ({}{})", name, placement(pool_, js.allocation),
                  js.slurm_id, slurm_name(name, js.generation),
                  js.started ? ", resuming from its checkpoint" : ""));
}

// A job being stopped: signalled again while it runs (a request can reach a
// job before its workers exist: the batch script is still reading its nodes),
// and cancelled outright past the stop deadline, so that no job start-up or
// hang can hold it (or its nodes) for good.
void Controller::stop(const std::string& name, const JobState& js, const QueuedJob& q) {
  const double t = now();
  const double since = stop_since_.emplace(name, t).first->second;  // after our restart: from now
  if (t - since >= kStopDeadlineSeconds) {
    if (cancelled_.insert(q.id).second) {
      slurm_.cancel(q);
      say(fmt::format("{} (Slurm job {}) not stopped {:.0f} s after the request: cancelled; it will resume from "
                      "its last checkpoint", name, js.slurm_id, kStopDeadlineSeconds));
    }
  } else if (t - signalled_[name] >= kResignalSeconds) {
    slurm_.stop(q);
    signalled_[name] = t;
  }
}

// Running jobs whose machines change are stopped; waiting jobs the plan
// places are submitted (they wait in Slurm while a stopping job still holds
// their nodes).
void Controller::act(const std::vector<QueuedJob>& queue) {
  for (auto& [name, js] : state_.jobs) {
    if (js.status == Status::kSubmitting) {  // written before an sbatch that may not have happened
      submit(name, js);
      continue;
    }
    const QueuedJob* q = find(queue, slurm_name(name, js.generation));
    if (js.status == Status::kStopping && q != nullptr) {
      stop(name, js, *q);
      continue;
    }
    const auto t = target_.find(name);
    if (t == target_.end()) continue;
    if (js.status == Status::kRunning && t->second != js.allocation) {
      if (q == nullptr) continue;  // it just ended: the next look sees how
      js.status = Status::kStopping;
      save();
      slurm_.stop(*q);
      signalled_[name] = stop_since_[name] = now();
      if (o_.crash_after == "scancel") std::_Exit(kCrashExitCode);
      say(fmt::format("{} (Slurm job {}) stopping: the plan moves it from {} to {}", name, js.slurm_id,
                      placement(pool_, js.allocation), placement(pool_, t->second)));
    } else if (js.status == Status::kWaiting && sched::machines_in(t->second) > 0) {
      js.status = Status::kSubmitting;
      ++js.generation;
      js.allocation = t->second;
      save();
      submit(name, js);
    }
  }
}

std::size_t Controller::poll() {
  const double t = now();
  const bool arrived = read_spool(t);
  const auto queue = slurm_.queue(kJobPrefix);
  const bool ended = reconcile(queue, t);
  if (arrived || ended || last_plan_ < 0.0 || t - last_plan_ >= o_.round_seconds) {
    replan(t);
    save();
  }
  act(queue);
  std::size_t open = 0;
  for (const auto& [name, js] : state_.jobs)
    open += js.status != Status::kDone && js.status != Status::kFailed;
  return open;
}

}  // namespace hetrain::pool
