// The simulated world's step-to-step noise: per worker, a multiplier of its
// noise-free compute time drawn from its group's NoiseModel (cluster.h):
// normal or log-normal around 1, autocorrelated through an AR(1) process,
// with occasional spikes; or blocks replayed from a recorded trace of real
// runs (circular block bootstrap). Part of the world, not of any policy: nothing here comes from alloc/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hetrain/sim/cluster.h"

namespace hetrain::sim {

// Reads a trace file: '#' comment lines, one header line naming the recorded
// workers, then one row per step of positive ratios, one per worker. Throws
// DataError "PATH:LINE: what is wrong".
std::shared_ptr<const NoiseTrace> load_trace(const std::string& path);

// `path` as given if absolute, else relative to the directory of `beside`
// (a trace named in a cluster file is found next to that file).
std::string resolve_beside(const std::string& path, const std::string& beside);

// The mean of a group's multiplier (its noise-free time x this = its mean
// time): what an observer that knows a worker's true mean speed, but not its
// noise, knows.
double mean_multiplier(const WorkerGroup& g);

// Every worker's noise process, advanced one step at a time.
class NoiseStreams {
 public:
  explicit NoiseStreams(std::uint64_t seed) : rng_(seed) {}
  // Forgets every worker's state (a change of world renumbers the ranks).
  void reset(std::size_t workers);
  // The multiplier of `rank`'s time this step (a worker of `g`).
  double draw(std::size_t rank, const WorkerGroup& g);
  // A multiplier of the allreduce: max(0, 1 + sigma z), independent per step.
  double independent_normal(double sigma);

 private:
  struct State {
    double x = 0.0;          // the AR(1) process, stationary N(0, 1)
    bool started = false;    // x holds a value
    std::size_t column = 0;  // kTrace: the recorded worker replayed
    std::size_t position = 0;
    std::size_t left = 0;  // steps left in this block
  };
  double unit();  // uniform [0, 1), the same on every standard library
  double correlated(State& s, double correlation);
  double replay(State& s, const NoiseModel& m);

  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::vector<State> state_;
};

}  // namespace hetrain::sim
