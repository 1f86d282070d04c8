// A communication group: a small value over an abstract implementation (the
// shape of MLX's distributed Group). Torch-free on purpose: buffers are plain
// spans, so the many files that include this header stay cheap to compile.
// The backend (comm/gloo/ today) is chosen at link time by CMake.
#pragma once

#include <memory>
#include <span>

namespace hetrain::comm {

// Every call blocks until the collective completes on this rank, and throws
// CommError when a peer is gone or the group's timeout passes.
class GroupImpl {
 public:
  virtual ~GroupImpl() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void allreduce_sum(std::span<float> data) = 0;
  virtual void allreduce_sum(std::span<double> data) = 0;
  virtual void broadcast(std::span<float> data, int root) = 0;
  virtual void barrier() = 0;
};

class Group {
 public:
  explicit Group(std::shared_ptr<GroupImpl> impl) : impl_(std::move(impl)) {}
  int rank() const { return impl_->rank(); }
  int size() const { return impl_->size(); }
  void allreduce_sum(std::span<float> data) { impl_->allreduce_sum(data); }
  void allreduce_sum(std::span<double> data) { impl_->allreduce_sum(data); }
  void broadcast(std::span<float> data, int root) { impl_->broadcast(data, root); }
  void barrier() { impl_->barrier(); }

 private:
  std::shared_ptr<GroupImpl> impl_;
};

}  // namespace hetrain::comm
