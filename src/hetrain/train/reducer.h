// Gradient reduction, overlapped with backward (as PyTorch DDP's reducer).
//
// Terms: the flat buffer holds every parameter's gradient (as views, so
// backward accumulates straight into it) followed by the telemetry slots. The
// parameters are laid out in REVERSE module order, the order backward
// produces their gradients, and cut into buckets of at most bucket_elements
// floats: bucket 0 holds the last layers, whose gradients are ready first. A
// bucket is ready when the autograd accumulator of each of its parameters has
// run (a post hook counts them down). A communication thread reduces the
// buckets in index order, each as soon as it is ready, while backward goes
// on with earlier layers. The last bucket also holds the telemetry, so it is
// reduced only by finish(), after backward (and its emulated device time),
// on the training thread once the others are done: the compute times still
// ride in the gradient allreduce, at no extra collective.
//
// Every rank issues the same collectives in the same order (bucket index
// order, whatever order the hooks fire in), so any allreduce algorithm works
// under it. A rank with an empty slice runs no backward: finish() marks its
// (zero) buckets ready.
//
// Re-learning the order (as DDP rebuilds its buckets): module order is only
// a guess at backward's. During the first step each rank records the order
// its accumulators actually ran in; at the end of that step the ranks agree
// on one recording (the fullest, lowest rank first: one small allreduce and
// one broadcast, once per run) and, if it differs, lay the buffer out again
// in that order, moving the step's reduced gradients with it.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "hetrain/comm/allreduce.h"

namespace hetrain::train {

struct ReduceTimes {
  double exposed_seconds = 0.0;  // the training thread blocked in finish()
  double hidden_seconds = 0.0;   // communication that ran while backward was still computing
};

class GradientReducer {
 public:
  // Binds the gradients of `model` into `buffer` (first `num_params` floats;
  // the rest is telemetry). overlap = false: finish() reduces the whole
  // buffer in bucket_elements calls, after backward.
  GradientReducer(torch::nn::Module& model, std::span<float> buffer, std::size_t num_params, comm::Group& group,
                  comm::Algorithm algorithm, std::size_t bucket_elements, bool overlap);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before backward: arms the hooks for this step.
  void begin_step();
  // After backward, with the telemetry written: reduces what is left and
  // waits for every bucket. Rethrows a bucket's failure (CommError) here.
  ReduceTimes finish();

  std::size_t buckets() const { return bucket_end_.size(); }
  // Parameter indices (in model.parameters() order) of each bucket, in the
  // order they lie in the buffer.
  std::vector<std::vector<std::size_t>> bucket_parameters() const;

 private:
  // Binds the gradients in `order` (parameter indices, the first ready
  // first) and cuts the buckets.
  void lay_out(const std::vector<std::size_t>& order);
  // After the first step's reduction: adopt the observed ready order.
  void relearn_order();
  void parameter_ready(std::size_t param);
  void communicate();

  std::span<float> buffer_;
  comm::Group& group_;
  comm::Algorithm algorithm_;
  std::size_t bucket_elements_;
  bool overlap_;
  std::vector<torch::Tensor> params_;
  std::vector<std::size_t> order_;      // parameter indices in buffer order
  std::vector<std::size_t> offset_of_;  // per parameter: where its gradient lies
  std::vector<std::size_t> bucket_of_;  // per parameter
  std::vector<std::size_t> bucket_begin_, bucket_end_;  // buffer ranges
  std::vector<int> params_in_bucket_;
  // Guarded by mu_ (the hooks write them):
  std::vector<std::size_t> observed_;  // ready order seen in the first step
  std::vector<bool> recorded_;         // per parameter: in observed_
  bool learned_ = false;               // the order is settled: record no more
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive for their hooks

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> pending_;   // parameters still to accumulate, per bucket
  std::size_t step_ = 0;       // bumped by begin_step: wakes the communication thread
  std::size_t done_ = 0;       // buckets reduced this step
  double comm_seconds_ = 0.0;  // spent reducing this step
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace hetrain::train
