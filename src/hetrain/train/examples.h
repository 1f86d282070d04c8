// The data set as the step sees it: samples gathered by id into a batch of
// model inputs and loss targets. Two kinds: in-memory idx/synthetic images
// (views over the loaded bytes, as before), and memory-mapped .npy arrays,
// of which a worker reads only the rows of its own slices.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hetrain/data/idx.h"
#include "hetrain/data/npy.h"
#include "hetrain/train/dataset.h"

namespace hetrain::train {

struct Batch {
  torch::Tensor x;  // float32 [b, input shape...]
  torch::Tensor y;  // int64 [b] class labels, or float32 [b, target shape...]
};

class Examples {
 public:
  virtual ~Examples() = default;
  virtual std::size_t size() const = 0;
  // Samples ids[0], ids[1], ... in that order. Thread-safe: the prefetcher
  // calls it from its own thread.
  virtual Batch gather(std::span<const std::uint32_t> ids) const = 0;
  // Samples [begin, begin + count) (evaluation reads the test set in order).
  virtual Batch range(std::size_t begin, std::size_t count) const = 0;
  // A hint that these samples will be gathered soon (files: start reading
  // them now, without waiting). In memory: nothing to do.
  virtual void will_need(std::span<const std::uint32_t> /*ids*/) const {}
};

// Wraps an in-memory split (idx or synthetic). The shared_ptr may alias a
// split the caller owns (the C++ API's train(), which must then outlive it).
DataSet image_dataset(std::shared_ptr<const data::DataSplit> split, std::string name);

// Takes ownership of memory-mapped .npy arrays (data/npy.h).
DataSet npy_dataset(data::NpyData npy, std::string name);

// The per-sample shape of a .npy input as the model takes it: the rows'
// own shape ((N, 20) -> [20], (N, 28, 28) -> [28, 28]).
std::vector<std::int64_t> as_shape(const std::vector<std::size_t>& dims);

}  // namespace hetrain::train
