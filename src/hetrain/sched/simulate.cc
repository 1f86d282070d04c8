// The event-driven simulation of a job trace (docs/scheduling.md,
// "Simulation").
//
// Terms: an event is an arrival, a completion or a round (round_seconds
// after the last plan). Between events every job runs at a constant rate,
// 1 / step_seconds steps per second on the machines it holds, except while
// it restarts: a job whose machines changed after it started makes no
// progress for restart_seconds, and holds its new machines meanwhile. At an
// event the planner re-plans every arrived, unfinished job (FCFS starts what
// fits at the head of the queue instead). Time jumps from event to event, so
// the cost is O(events x jobs) plus the plans.
#include "hetrain/sched/simulate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "hetrain/common/error.h"

namespace hetrain::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSecondsPerHour = 3600.0;
constexpr double kP90 = 0.9;
// FCFS waits rather than take a type whose step is more than this many times
// its fastest type's (a user asks for a GPU, not for a CPU box 30x slower).
constexpr double kFcfsSlowest = 2.0;
// A job with less than this share of its steps left at an event is done (the
// rounding error of rate x time).
constexpr double kDoneSteps = 1e-9;

struct JobState {
  bool arrived = false, done = false, started = false;
  double remaining = 0.0;  // steps
  Allocation alloc;
  double rate = 0.0;       // steps per second on alloc
  double resume_at = 0.0;  // progress starts again here (after a restart)
  JobOutcome out;
};

class Run {
 public:
  Run(const Pricer& p, const SimJobsOptions& o) : p_(p), o_(o), state_(p.jobs().size()) {
    order_.resize(state_.size());
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    std::stable_sort(order_.begin(), order_.end(), [&p](std::size_t l, std::size_t r) {
      return p.jobs()[l].arrival < p.jobs()[r].arrival;
    });
    for (std::size_t j = 0; j < state_.size(); ++j) {
      state_[j].remaining = static_cast<double>(p.jobs()[j].steps);
      state_[j].alloc.assign(p.pool().types.size(), 0);
    }
  }
  ScheduleResult go();

 private:
  void admit();
  void replan();
  void start_fcfs();
  void assign(std::size_t j, const Allocation& x);
  double next_completion(std::size_t* job) const;
  void advance(double to);

  const Pricer& p_;
  const SimJobsOptions& o_;
  std::vector<JobState> state_;
  std::vector<std::size_t> order_;  // by arrival
  std::size_t next_arrival_ = 0;    // into order_
  double now_ = 0.0;
  double next_round_ = kInf;
  ScheduleResult res_;
};

void Run::admit() {
  while (next_arrival_ < order_.size() && p_.jobs()[order_[next_arrival_]].arrival <= now_)
    state_[order_[next_arrival_++]].arrived = true;
}

void Run::assign(std::size_t j, const Allocation& x) {
  JobState& s = state_[j];
  if (x == s.alloc) return;
  if (machines_in(x) > 0) {
    if (s.started) {
      ++s.out.moves;
      s.resume_at = now_ + o_.restart_seconds;
    } else {
      s.started = true;
      s.out.start = now_;
      s.resume_at = now_;
    }
  }
  s.alloc = x;
  s.rate = machines_in(x) > 0 ? 1.0 / p_.step_seconds(j, x) : 0.0;
}

void Run::replan() {
  std::vector<ActiveJob> active;
  for (std::size_t j = 0; j < state_.size(); ++j) {
    const JobState& s = state_[j];
    if (s.arrived && !s.done) active.push_back({j, s.remaining, s.alloc, s.started});
  }
  ++res_.rounds;
  PlanOptions plan_options = o_.plan;
  plan_options.restart_seconds = o_.restart_seconds;
  const RoundPlan plan = plan_round(p_, active, plan_options);
  for (std::size_t a = 0; a < active.size(); ++a) assign(active[a].job, plan.allocation[a]);
  if (o_.on_plan) o_.on_plan(active, plan.allocation);
  next_round_ = o_.round_seconds > 0.0 && !active.empty() ? now_ + o_.round_seconds : kInf;
}

// FCFS: the head of the queue takes `workers` machines (at most its cap and
// the largest count of a type it runs on) of the fastest type that has them
// free, among the types within kFcfsSlowest of its fastest; when none has,
// everyone behind it waits.
void Run::start_fcfs() {
  const std::size_t types = p_.pool().types.size();
  std::vector<std::size_t> free(types);
  for (std::size_t t = 0; t < types; ++t) free[t] = p_.pool().types[t].count;
  for (const auto& s : state_) {
    for (std::size_t t = 0; t < types; ++t) free[t] -= s.alloc[t];
  }
  for (const std::size_t j : order_) {
    const JobState& s = state_[j];
    if (!s.arrived || s.done || s.started) continue;
    const Job& job = p_.jobs()[j];
    std::size_t want = std::min(job.workers, job.cap());
    std::size_t largest = 0;
    for (std::size_t t = 0; t < types; ++t) {
      if (job.speed[t] > 0.0) largest = std::max(largest, p_.pool().types[t].count);
    }
    want = std::min(want, largest);
    std::vector<double> step(types, kInf);
    for (std::size_t t = 0; t < types; ++t) {
      if (job.speed[t] <= 0.0 || p_.pool().types[t].count < want) continue;
      Allocation x(types, 0);
      x[t] = want;
      step[t] = p_.step_seconds(j, x);
    }
    const double fastest = *std::min_element(step.begin(), step.end());
    std::size_t best = types;
    for (std::size_t t = 0; t < types; ++t) {
      if (free[t] >= want && step[t] <= kFcfsSlowest * fastest && (best == types || step[t] < step[best]))
        best = t;
    }
    if (best == types) break;  // head-of-line blocking
    Allocation x(types, 0);
    x[best] = want;
    free[best] -= want;
    assign(j, x);
    ++res_.rounds;
  }
  if (!o_.on_plan) return;
  std::vector<ActiveJob> present;
  std::vector<Allocation> held;
  for (std::size_t j = 0; j < state_.size(); ++j) {
    const JobState& s = state_[j];
    if (!s.arrived || s.done) continue;
    present.push_back({j, s.remaining, s.alloc, s.started});
    held.push_back(s.alloc);
  }
  o_.on_plan(present, held);
}

double Run::next_completion(std::size_t* job) const {
  double best = kInf;
  for (std::size_t j = 0; j < state_.size(); ++j) {
    const JobState& s = state_[j];
    if (s.done || s.rate <= 0.0) continue;
    const double at = std::max(now_, s.resume_at) + s.remaining / s.rate;
    if (at < best) best = at, *job = j;
  }
  return best;
}

void Run::advance(double to) {
  for (std::size_t j = 0; j < state_.size(); ++j) {
    JobState& s = state_[j];
    if (s.done || !s.arrived) continue;
    const double held = to - now_;
    const auto n = static_cast<double>(machines_in(s.alloc));
    s.out.machine_seconds += n * held;
    for (std::size_t t = 0; t < s.alloc.size(); ++t) {
      s.out.cost +=
          static_cast<double>(s.alloc[t]) * p_.pool().types[t].price_per_hour * held / kSecondsPerHour;
    }
    if (s.rate > 0.0) s.remaining -= s.rate * std::max(0.0, to - std::max(now_, s.resume_at));
  }
  now_ = to;
}

ScheduleResult Run::go() {
  std::size_t finished = 0;
  bool dirty = true;
  admit();
  while (finished < state_.size()) {
    if (dirty) {
      if (o_.scheduler == Scheduler::kFcfs)
        start_fcfs();
      else
        replan();
      dirty = false;
    }
    std::size_t done_job = state_.size();
    const double t_done = next_completion(&done_job);
    double t_arrival = kInf;
    if (next_arrival_ < order_.size()) t_arrival = p_.jobs()[order_[next_arrival_]].arrival;
    const double next = std::min({t_done, t_arrival, next_round_});
    // Every arrived job can run somewhere (parse_jobs checks), so only a bug stalls.
    HETRAIN_ENFORCE_LT(next, kInf);
    advance(next);
    if (next == t_done) state_[done_job].remaining = 0.0;
    for (std::size_t j = 0; j < state_.size(); ++j) {
      JobState& s = state_[j];
      // Jobs that end together end in one event, or the survivor would be moved.
      if (s.done || s.rate <= 0.0 || s.remaining > kDoneSteps * static_cast<double>(p_.jobs()[j].steps))
        continue;
      s.done = true;
      s.remaining = 0.0;
      s.out.finish = now_;
      s.out.jct = now_ - p_.jobs()[j].arrival;
      s.alloc.assign(s.alloc.size(), 0);
      s.rate = 0.0;
      ++finished;
    }
    if (next == next_round_) next_round_ = kInf;
    admit();
    dirty = true;
  }
  for (auto& s : state_) res_.jobs.push_back(s.out);
  return res_;
}

}  // namespace

double jain_index(const std::vector<double>& x) {
  double sum = 0.0, squares = 0.0;
  for (const double v : x) sum += v, squares += v * v;
  return squares > 0.0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 0.0;
}

ScheduleResult simulate_jobs(const Pricer& p, const SimJobsOptions& o) {
  ScheduleResult r = Run(p, o).go();
  std::vector<double> jct, speed;
  double held = 0.0;
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const Job& job = p.jobs()[j];
    const JobOutcome& out = r.jobs[j];
    jct.push_back(out.jct);
    const double ideal = static_cast<double>(job.steps * job.global_batch) / p.isolated(j);
    speed.push_back(ideal / std::max(out.jct, ideal) / job.weight);
    r.makespan = std::max(r.makespan, out.finish);
    r.cost += out.cost;
    r.moves += out.moves;
    held += out.machine_seconds;
  }
  r.avg_jct = std::accumulate(jct.begin(), jct.end(), 0.0) / static_cast<double>(jct.size());
  std::sort(jct.begin(), jct.end());
  const auto rank = static_cast<std::size_t>(std::ceil(kP90 * static_cast<double>(jct.size())));
  r.p90_jct = jct[std::max<std::size_t>(rank, 1) - 1];
  const double capacity = static_cast<double>(p.pool().machines()) * r.makespan;
  r.utilization = capacity > 0.0 ? held / capacity : 0.0;
  r.jain = jain_index(speed);
  return r;
}

}  // namespace hetrain::sched
