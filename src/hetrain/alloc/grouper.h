// The Grouper: workers alike within what the estimates can tell are one
// unit, given the same share, so noise cannot split identical workers apart.
// Terms: each worker has a planned time per sample t_i at the batch the
// Proposer keys it at (its key: proposer.cc, key_batches), with relative
// standard error e_i, and a class (what the placement says of its
// hardware: proposer.cc). A segment is a run of
// workers of one class, adjacent in the order of t; its level is the
// precision-weighted mean of log t_i (weights 1 / e_i^2) and its error
// 1 / sqrt(sum of the weights).
// Algorithm: start with one segment per worker; repeatedly merge the two
// adjacent segments whose gap in level is the smallest share of their
// tolerance, while that share is at most 1. Tolerance: the largest of
// AdaptiveTuning::alike, clip_sigmas combined standard errors, and the
// rounding's grain: one sample's share of the larger batch the two are keyed
// at (1 / b). Workers whose times per sample differ by less than that would
// be planned shares less than a sample apart, which no integer split holds:
// telling them apart plans nothing the rounding keeps, and leaves their split
// to noise (most of all at small batches, and for identical workers with
// tiles, whose cost jumps every few samples: one holding the remainder reads
// dearer a sample). A noisy
// worker therefore joins the segment it is statistically closest to, not
// whichever its neighbour in the sort happened to be, and a continuous
// spread of speeds is not chained (a segment's level moves to its middle).
// One hysteresis: a boundary within a unit of the last call (some unit has
// members on both sides of it in the sort, within its class) is held at twice the tolerance
// (6 standard errors: noise alone does not cut a unit). A worker of another
// unit that sorts between two members does not cut them: it is held to them
// as they are to each other, and may join them. A held boundary's errors are
// widened by the members' reach (a level a fresh change alarm just moved may
// be a false alarm's: it stays in its unit until the samples after the alarm
// confirm it). Reach only widens a boundary that is held: it makes no worker
// alike to one it was not with.
// O(N log N): a sort, then a bucket queue of boundaries.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <vector>

#include "hetrain/alloc/tuning.h"

namespace hetrain::alloc {

struct GroupKey {
  double time = 0.0;      // planned seconds per sample where it is keyed (> 0)
  double error = 0.0;     // its relative standard error
  std::size_t klass = 0;  // workers of different classes are never alike
  double reach = 0.0;     // how far its level may have been a moment ago (a fresh change's, estimator.h)
  double grain = 0.0;     // one sample's share of the batch it is keyed at (1 / b)
};

class Grouper {
 public:
  explicit Grouper(AdaptiveTuning tuning) : tuning_(tuning) {}
  // Each worker's unit, numbered 0.. in the order of their lowest ranks.
  std::vector<std::size_t> group(const std::vector<GroupKey>& keys);
  const std::vector<std::size_t>& last() const { return previous_; }

 private:
  // A run [first, last] of positions in the sorted order.
  struct Segment {
    std::size_t first = 0, last = 0;
    std::size_t prev = 0, next = 0;
    double weight = 0.0, weighted_log = 0.0;  // sum of 1/e^2, and of log t / e^2
    double reach = 0.0;                       // the largest of its members' reach
    double grain = 0.0;                       // the least of its members' grain (the largest batch's)
    std::size_t version = 0;                  // bumped at every merge: stale queue entries are skipped
    double level() const { return weighted_log / weight; }
  };
  double share(const std::vector<Segment>& s, std::size_t left,
               const std::vector<std::size_t>& klass_at) const;
  void sort_keys(const std::vector<GroupKey>& keys);
  void mark_held(const std::vector<std::size_t>& order, const std::vector<std::size_t>& klass_at);
  AdaptiveTuning tuning_;
  std::vector<std::size_t> previous_;  // the last call's units (empty: none)
  // Working space of one call, kept to reuse its memory (at 100,000 workers
  // a fresh allocation each step is pages the kernel maps and zeroes): the
  // merge queue's buckets, the sort, and by sorted position the segments,
  // each position's rank and class, and whether the boundary after it is held.
  std::vector<std::vector<std::array<std::size_t, 3>>> buckets_;
  std::vector<std::tuple<std::size_t, double, std::size_t>> sorted_;
  std::vector<Segment> seg_;
  std::vector<std::size_t> order_, klass_at_;
  std::vector<bool> held_;
};

}  // namespace hetrain::alloc
