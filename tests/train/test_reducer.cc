// The reducer re-learns its bucket order from the order backward actually
// produced the gradients, and the reduced gradients stay exact across the
// re-layout. Two threads act as two ranks over real Gloo.
#include <gtest/gtest.h>

#include <exception>
#include <thread>

#include "hetrain/comm/gloo/gloo_group.h"
#include "hetrain/train/reducer.h"

namespace hetrain::train {
namespace {

constexpr auto kTimeout = std::chrono::seconds(60);
constexpr int kRanks = 2;
constexpr int kSteps = 3;
constexpr std::size_t kTelemetry = 1;  // floats after the gradients

// Registered in the reverse of the order forward uses them, so the module
// order's guess at backward's order is exactly wrong: parameters() is
// [last.weight, last.bias, first.weight, first.bias], and backward produces
// last's gradients first.
struct Backwards : torch::nn::Module {
  Backwards() {
    last = register_module("last", torch::nn::Linear(8, 3));
    first = register_module("first", torch::nn::Linear(5, 8));
  }
  torch::Tensor forward(const torch::Tensor& x) { return last(torch::relu(first(x))); }
  torch::nn::Linear last{nullptr}, first{nullptr};
};

// The same parameters in every thread, without the global generator (which
// the threads would share and race on).
void fix_parameters(Backwards& m) {
  torch::NoGradGuard no_grad;
  double phase = 0.0;
  for (auto& p : m.parameters()) {
    p.copy_(torch::sin(torch::arange(p.numel(), torch::kFloat32).add(phase)).mul(0.3).view_as(p));
    phase += 1.0;
  }
}

torch::Tensor input(int rank, int step) {
  return torch::arange(20, torch::kFloat32).reshape({4, 5}).mul(0.05 * (rank + 1)).add(0.1 * step);
}

// Rank 1 skips backward in the first step (an empty slice): it records no
// order and must adopt rank 0's.
bool computes(int rank, int step) { return !(rank == 1 && step == 0); }

// Sum over ranks of each parameter's gradient, on a plain model without a reducer.
std::vector<torch::Tensor> reference(int step) {
  Backwards m;
  fix_parameters(m);
  for (int r = 0; r < kRanks; ++r)
    if (computes(r, step)) m.forward(input(r, step)).sum().backward();
  std::vector<torch::Tensor> out;
  for (auto& p : m.parameters()) out.push_back(p.grad().clone());
  return out;
}

struct RankResult {
  std::vector<std::vector<std::size_t>> before, after;  // bucket_parameters()
  std::vector<std::vector<torch::Tensor>> grads;        // per step
};

RankResult run_rank(comm::Group& g) {
  Backwards m;
  fix_parameters(m);
  std::size_t num_params = 0;
  for (auto& p : m.parameters()) num_params += static_cast<std::size_t>(p.numel());
  std::vector<float> buffer(num_params + kTelemetry);
  // One element per bucket: every parameter is a bucket of its own.
  GradientReducer reducer(m, std::span<float>(buffer), num_params, g, comm::Algorithm::kRing, 1, true);
  RankResult out;
  out.before = reducer.bucket_parameters();
  for (int step = 0; step < kSteps; ++step) {
    std::fill(buffer.begin(), buffer.end(), 0.0f);
    reducer.begin_step();
    if (computes(g.rank(), step)) m.forward(input(g.rank(), step)).sum().backward();
    reducer.finish();
    std::vector<torch::Tensor> grads;
    for (auto& p : m.parameters()) grads.push_back(p.grad().clone());
    out.grads.push_back(grads);
  }
  out.after = reducer.bucket_parameters();
  return out;
}

TEST(GradientReducer, RelearnsTheBucketOrderFromBackwardAndStaysExact) {
  torch::set_num_threads(1);
  comm::InProcessRendezvous rendezvous;
  std::vector<RankResult> results(kRanks);
  std::vector<std::exception_ptr> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        comm::Group g = comm::connect_gloo(rendezvous, r, kRanks, kTimeout);
        results[static_cast<std::size_t>(r)] = run_rank(g);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  using Buckets = std::vector<std::vector<std::size_t>>;
  for (const auto& r : results) {
    // Module order reversed: first.bias, first.weight, last.bias, last.weight.
    EXPECT_EQ(r.before, (Buckets{{3}, {2}, {1}, {0}}));
    // Learned: last's two parameters (ready first in backward) lead, first's follow.
    ASSERT_EQ(r.after.size(), 4u);
    for (std::size_t b = 0; b < 2; ++b) EXPECT_LE(r.after[b].at(0), 1u) << "bucket " << b;
    for (std::size_t b = 2; b < 4; ++b) EXPECT_GE(r.after[b].at(0), 2u) << "bucket " << b;
    EXPECT_EQ(r.after, results[0].after);  // every rank lays out the same
  }
  for (int step = 0; step < kSteps; ++step) {
    const auto want = reference(step);
    for (int r = 0; r < kRanks; ++r) {
      const auto& got = results[static_cast<std::size_t>(r)].grads[static_cast<std::size_t>(step)];
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t k = 0; k < want.size(); ++k) {
        EXPECT_TRUE(torch::allclose(got[k], want[k], 1e-6, 1e-6))
            << "rank " << r << " step " << step << " parameter " << k;
      }
    }
  }
}

}  // namespace
}  // namespace hetrain::train
