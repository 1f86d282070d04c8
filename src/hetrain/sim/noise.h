// The simulated world's step-to-step noise: per worker, a multiplier of its
// noise-free compute time drawn from its group's NoiseModel (cluster.h):
// normal or log-normal around 1, autocorrelated through an AR(1) process,
// with occasional spikes; or blocks replayed from a recorded trace of real
// runs (circular block bootstrap). Part of the world, not of any policy: nothing here comes from alloc/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

// Every worker's noise process, advanced one step at a time. The noise is
// the world's, not the policy's: each worker draws from its own stream
// (seeded by the cluster's seed, the world and its rank) and its process
// runs on every step, idle or not (a busy neighbour, a throttled period, a
// thermal state do not wait for it to compute). So every policy run on a
// cluster meets the same noise at the same step, whatever it gives whom:
// their times are compared on common random numbers.
class NoiseStreams {
 public:
  explicit NoiseStreams(std::uint64_t seed);
  // A new world of `workers` ranks (a change of world renumbers them): fresh
  // processes, on streams of their own for this world.
  void reset(std::size_t workers);
  // The multiplier of `rank`'s time this step (a worker of `g`); call once
  // per rank and step, for every rank.
  double draw(std::size_t rank, const WorkerGroup& g);
  // A multiplier of the allreduce: max(0, 1 + sigma z), independent per step.
  double independent_normal(double sigma);

 private:
  struct State {
    std::uint64_t rng = 0;   // SplitMix64's state: a stream of its own, 8 bytes a worker
    double x = 0.0;          // the AR(1) process, stationary N(0, 1)
    bool started = false;    // x holds a value
    std::size_t column = 0;  // kTrace: the recorded worker replayed
    std::size_t position = 0;
    std::size_t left = 0;  // steps left in this block
  };
  static double unit(State& s);    // uniform [0, 1), the same on every standard library
  static double normal(State& s);  // standard normal (Box-Muller), the same everywhere too
  static double correlated(State& s, double correlation);
  static double replay(State& s, const NoiseModel& m);

  std::uint64_t seed_;
  std::uint64_t worlds_ = 0;  // resets so far: each world's streams are new
  State network_;             // the allreduce's stream
  std::vector<State> state_;
};

}  // namespace hetrain::sim
