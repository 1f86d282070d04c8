// What the adaptive policy believes (adaptive.h): each worker's models, the
// groups of alike workers, and the best split they predict, for independent
// devices and for workers sharing a host (hosts.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "hetrain/alloc/adaptive.h"

namespace hetrain::alloc {
namespace {

// The relative scatter of a worker's CPU-seconds per step assumed at least
// (host_costs): large, so that a handful of samples groups alike workers.
constexpr double kPriorCpuScatter = 0.3;

// Samples from which a worker's own scatter is trusted over that prior.
constexpr std::size_t kOwnScatterSamples = 8;

// How much faster (relative) the host plan must predict a step than the
// independent-device plan, priced alike, to be proposed instead.
constexpr double kHostPlanGain = 0.1;

}  // namespace

std::vector<WorkerModel> AdaptivePolicy::learned() const {
  std::vector<WorkerModel> out;
  for (const auto& c : cost_)
    out.push_back(c.fitted() ? WorkerModel{c.overhead(), c.speed()} : WorkerModel{0.0, 0.0});
  return out;
}

std::vector<WorkerModel> AdaptivePolicy::models() const {
  std::vector<WorkerModel> out;
  for (const auto& c : cost_) out.push_back({c.overhead(), c.speed()});
  return out;
}

std::optional<double> AdaptivePolicy::model_band() {
  std::vector<double> errors;  // relative standard error of each worker's prediction
  bool single = false;         // some worker has one sample: its noise is unknown
  for (const auto& c : cost_) {
    if (!c.fitted() || (!warmed_up_ && c.samples() < config_.min_samples)) return std::nullopt;
    single = single || c.samples() < 2;
    errors.push_back(kMedianErrorPerScatter * c.relative_scatter() /
                     std::sqrt(static_cast<double>(c.samples())));
  }
  warmed_up_ = true;
  double band =
      std::max(config_.dead_band, config_.noise_bands * *std::max_element(errors.begin(), errors.end()));
  if (single) band = std::max(band, config_.single_sample_band);
  return band;
}

std::vector<double> AdaptivePolicy::noise_by_rank() const {
  std::vector<double> sigmas;
  for (const auto& c : cost_) sigmas.push_back(kSigmaPerMad * c.relative_scatter());
  return sigmas;
}

double AdaptivePolicy::noise_limit() const {
  return config_.noise_margin > 0.0 ? config_.group_tolerance / config_.noise_margin
                                    : std::numeric_limits<double>::infinity();
}

Grouping AdaptivePolicy::grouped_models() const {
  std::vector<double> errors;
  for (const auto& c : cost_) {
    const double n = static_cast<double>(c.samples());
    errors.push_back(n > 0.0 ? kMedianErrorPerScatter * c.relative_scatter() / std::sqrt(n) : 0.0);
  }
  const double typical_batch = static_cast<double>(global_batch_) / static_cast<double>(cost_.size());
  const std::vector<double> sigmas = noise_by_rank();
  std::vector<double> sigma_errors;
  for (std::size_t i = 0; i < cost_.size(); ++i) {
    const double n = static_cast<double>(std::max<std::size_t>(cost_[i].samples(), 1));
    sigma_errors.push_back(kMadSigmaError * sigmas[i] / std::sqrt(n));
  }
  auto by_noise = [&](const std::vector<std::size_t>& label) {
    return part_by_noise(label, sigmas, sigma_errors, noise_limit(), config_.group_bands);
  };
  Grouping g =
      pool_alike(models(), errors,
                 Likeness{incumbent_, typical_batch, config_.group_tolerance, config_.group_bands}, groups_);
  if (!hosts_known()) return pool_labelled(models(), by_noise(g.group));
  // On shared hosts, groups by CPU cost (hosts.h: wall-clock times there say
  // more about the neighbours); the other workers keep their groups among
  // themselves, each labelled by its lowest such rank.
  std::vector<std::size_t> label = host_groups(placement_, host_costs(), incumbent_, typical_batch, groups_);
  std::vector<std::size_t> lowest(cost_.size(), cost_.size());
  for (std::size_t r = 0; r < cost_.size(); ++r) {
    if (placement_.host[r] == kNoHost) lowest[g.group[r]] = std::min(lowest[g.group[r]], r);
  }
  for (std::size_t r = 0; r < cost_.size(); ++r) {
    if (placement_.host[r] == kNoHost) label[r] = lowest[g.group[r]];
  }
  return pool_labelled(models(), by_noise(label));
}

bool AdaptivePolicy::hosts_known() const {
  if (!placement_.shared()) return false;
  for (std::size_t i = 0; i < cpu_.size(); ++i) {
    if (placement_.host[i] != kNoHost && !cpu_[i].fitted()) return false;
  }
  return true;
}

// Each worker's CPU cost and time off the CPU, as learned (zero for a worker
// off any host).
std::vector<HostCost> AdaptivePolicy::host_costs() const {
  std::vector<HostCost> costs(cost_.size());
  for (std::size_t i = 0; i < costs.size(); ++i) {
    if (placement_.host[i] == kNoHost || !cpu_[i].fitted()) continue;
    costs[i].cpu_overhead = cpu_[i].overhead();
    costs[i].cpu_per_sample = cpu_[i].seconds_per_sample();
    // A few samples say little of their own scatter: a prior keeps them
    // uncertain (so alike workers stay grouped) until the window fills.
    const double n = static_cast<double>(cpu_[i].samples()),
                 scatter = kMedianErrorPerScatter * cpu_[i].relative_scatter();
    costs[i].cpu_error =
        (cpu_[i].samples() < kOwnScatterSamples ? std::max(scatter, kPriorCpuScatter) : scatter) /
        std::sqrt(n);
    if (wait_[i].fitted()) {
      costs[i].wait_overhead = wait_[i].overhead();
      costs[i].wait_per_sample = wait_[i].seconds_per_sample();
    }
  }
  return costs;
}

// The model's best split, and in `now` its prediction for the incumbent.
// Workers sharing hosts: the better of the independent-device solve and
// the host solve, both priced by processor sharing of the hosts' cores.
SolvedSplit AdaptivePolicy::best_split_for(const Grouping& groups, double& now) const {
  std::vector<double> sigmas;
  for (const auto& c : cost_) sigmas.push_back(kSigmaPerMad * c.relative_scatter());
  const std::vector<WorkerModel> ms = with_noise_margin(groups, sigmas, config_.noise_margin);
  SolvedSplit best = solve_split(ms, global_batch_, bounds_);
  now = predicted_makespan(ms, incumbent_);
  if (!hosts_known()) return best;
  std::vector<HostCost> costs = host_costs();
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const double slower = groups.models[i].speed / ms[i].speed;  // the noise margin's
    costs[i].cpu_overhead *= slower, costs[i].cpu_per_sample *= slower;
    costs[i].wait_overhead *= slower, costs[i].wait_per_sample *= slower;
  }
  SolvedSplit on_hosts = solve_on_hosts(placement_, ms, costs, groups.group, global_batch_, bounds_);
  best.makespan = host_makespan(placement_, ms, costs, best.split);
  now = host_makespan(placement_, ms, costs, incumbent_);
  // The host plan only where it clearly wins: it rests on CPU-seconds, which
  // on a busy host differ by noise between identical workers.
  return on_hosts.makespan < (1.0 - kHostPlanGain) * best.makespan ? on_hosts : best;
}

}  // namespace hetrain::alloc
