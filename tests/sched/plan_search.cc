#include "plan_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace hetrain::sched::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double remaining_samples(const Pricer& p, const ActiveJob& a) {
  return std::max(a.remaining_steps, 1.0) * static_cast<double>(p.jobs()[a.job].global_batch);
}

std::size_t held(const Allocation& x) {
  std::size_t n = 0;
  for (const std::size_t k : x) n += k;
  return n;
}

// docs/scheduling.md: a job moves when the plan gives it machines other than
// those it holds, after it has started (or while it holds some).
double rate_of(const Pricer& p, const ActiveJob& a, double restart, const Allocation& x) {
  const double t = p.throughput(a.job, x);
  const bool moved = held(x) > 0 && (a.started || held(a.current) > 0) && x != a.current;
  if (t <= 0.0 || !moved) return t;
  const double r = remaining_samples(p, a);
  return r / (r / t + restart);
}

// One job's possible allocation and what it adds to a plan's value.
struct Option {
  Allocation x;
  double share = 0.0;         // rate / (w iso)
  double per_remaining = 0.0;  // rate / R
  double weighted = 0.0;       // w rate / R
  double money = 0.0;
  bool one_type = true;
};

std::vector<Option> options_of(const Pricer& p, const ActiveJob& a, double restart) {
  const Job& job = p.jobs()[a.job];
  const std::size_t types = p.pool().types.size();
  std::vector<Option> out;
  Allocation x(types, 0);
  // Odometer over every x with x_t <= count_t (0 where the job cannot run).
  while (true) {
    std::size_t n = held(x), used_types = 0;
    for (const std::size_t k : x) used_types += k > 0 ? 1 : 0;
    if (n <= job.cap()) {
      Option o;
      o.x = x;
      const double rate = rate_of(p, a, restart, x);
      const double r = remaining_samples(p, a);
      o.share = rate / (job.weight * p.isolated(a.job));
      o.per_remaining = rate / r;
      o.weighted = job.weight * rate / r;
      for (std::size_t t = 0; t < types; ++t) o.money += static_cast<double>(x[t]) * p.pool().types[t].price_per_hour;
      o.one_type = used_types <= 1;
      out.push_back(std::move(o));
    }
    std::size_t t = 0;
    for (; t < types; ++t) {
      const std::size_t top = job.speed[t] > 0.0 ? p.pool().types[t].count : 0;
      if (x[t] < top) {
        ++x[t];
        break;
      }
      x[t] = 0;
    }
    if (t == types) return out;
  }
}

struct Walk {
  const std::vector<std::vector<Option>>& options;
  const std::vector<double>& levels;
  Search& out;
  std::vector<std::size_t> left;

  void leaf(double least_share, double least_per, double weighted, double money, bool one_type) {
    ++out.plans;
    for (Optimum* o : {&out.mixed, one_type ? &out.one_type : nullptr}) {
      if (o == nullptr) continue;
      o->least_share = std::max(o->least_share, least_share);
      o->least_per_remaining = std::max(o->least_per_remaining, least_per);
      o->weighted_per_remaining = std::max(o->weighted_per_remaining, weighted);
    }
    for (std::size_t i = 0; i < levels.size(); ++i) {
      if (least_share >= levels[i] * (1.0 - kSame)) out.cheapest[i] = std::min(out.cheapest[i], money);
    }
  }

  void go(std::size_t a, double least_share, double least_per, double weighted, double money, bool one_type) {
    if (a == options.size()) return leaf(least_share, least_per, weighted, money, one_type);
    for (const Option& o : options[a]) {
      bool fits = true;
      for (std::size_t t = 0; t < left.size() && fits; ++t) fits = o.x[t] <= left[t];
      if (!fits) continue;
      for (std::size_t t = 0; t < left.size(); ++t) left[t] -= o.x[t];
      go(a + 1, std::min(least_share, o.share), std::min(least_per, o.per_remaining), weighted + o.weighted,
         money + o.money, one_type && o.one_type);
      for (std::size_t t = 0; t < left.size(); ++t) left[t] += o.x[t];
    }
  }
};

}  // namespace

bool beats(const Value& a, const Value& b) {
  const auto above = [](double l, double r) { return l > r + kSame * std::max(std::abs(l), std::abs(r)); };
  if (above(a.primary, b.primary)) return true;
  if (above(b.primary, a.primary)) return false;
  return above(a.secondary, b.secondary);
}

double money_rate(const Pricer& p, const std::vector<Allocation>& plan) {
  double money = 0.0;
  for (const Allocation& x : plan) {
    for (std::size_t t = 0; t < x.size(); ++t) money += static_cast<double>(x[t]) * p.pool().types[t].price_per_hour;
  }
  return money;
}

Value value_of(const Pricer& p, const std::vector<ActiveJob>& active, Objective objective, double restart,
               const std::vector<Allocation>& plan) {
  double least_share = kInf, least_per = kInf, shares = 0.0, weighted = 0.0;
  for (std::size_t a = 0; a < active.size(); ++a) {
    const Job& job = p.jobs()[active[a].job];
    const double rate = rate_of(p, active[a], restart, plan[a]);
    const double r = remaining_samples(p, active[a]);
    least_share = std::min(least_share, rate / (job.weight * p.isolated(active[a].job)));
    least_per = std::min(least_per, rate / r);
    shares += rate / p.isolated(active[a].job);
    weighted += job.weight * rate / r;
  }
  if (active.empty()) least_share = least_per = 0.0;
  switch (objective) {
    case Objective::kMinAvgJct:
      return {weighted, 0.0};
    case Objective::kMakespan:
      return {least_per, shares};
    case Objective::kCost:
      return {least_share, -money_rate(p, plan)};
    case Objective::kMaxMinFair:
      break;
  }
  return {least_share, shares};
}

std::string misfit(const Pricer& p, const std::vector<ActiveJob>& active, const std::vector<Allocation>& plan) {
  std::ostringstream why;
  if (plan.size() != active.size()) return "one allocation per active job expected";
  const std::size_t types = p.pool().types.size();
  for (std::size_t t = 0; t < types; ++t) {
    std::size_t used = 0;
    for (const Allocation& x : plan) used += x.size() == types ? x[t] : 0;
    if (used > p.pool().types[t].count)
      why << "type " << t << ": " << used << " machines of " << p.pool().types[t].count << "; ";
  }
  for (std::size_t a = 0; a < active.size(); ++a) {
    const Job& job = p.jobs()[active[a].job];
    if (plan[a].size() != types) {
      why << "job " << active[a].job << ": " << plan[a].size() << " types; ";
      continue;
    }
    if (held(plan[a]) > job.cap()) why << "job " << active[a].job << ": " << held(plan[a]) << " > cap; ";
    for (std::size_t t = 0; t < types; ++t) {
      if (plan[a][t] > 0 && job.speed[t] <= 0.0) why << "job " << active[a].job << " on type " << t << "; ";
    }
  }
  return why.str();
}

bool one_type_each(const std::vector<Allocation>& plan) {
  return std::all_of(plan.begin(), plan.end(),
                     [](const Allocation& x) { return std::count_if(x.begin(), x.end(), [](std::size_t k) { return k > 0; }) <= 1; });
}

double Optimum::of(Objective objective) const {
  switch (objective) {
    case Objective::kMinAvgJct:
      return weighted_per_remaining;
    case Objective::kMakespan:
      return least_per_remaining;
    case Objective::kMaxMinFair:
    case Objective::kCost:
      break;
  }
  return least_share;
}

Search exhaustive(const Pricer& p, const std::vector<ActiveJob>& active, double restart,
                  const std::vector<double>& cost_levels) {
  Search out;
  out.cheapest.assign(cost_levels.size(), kInf);
  std::vector<std::vector<Option>> options;
  for (const ActiveJob& a : active) options.push_back(options_of(p, a, restart));
  Walk walk{options, cost_levels, out, {}};
  for (const MachineType& t : p.pool().types) walk.left.push_back(t.count);
  walk.go(0, kInf, kInf, 0.0, 0.0, true);
  return out;
}

}  // namespace hetrain::sched::testing
