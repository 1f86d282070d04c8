// A communication group: a small value over an abstract implementation (the
// shape of MLX's distributed Group). Torch-free on purpose: buffers are plain
// spans, so the many files that include this header stay cheap to compile.
// The backend (comm/gloo/ today) is chosen at link time by CMake.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace hetrain::comm {

enum class Dtype { kFloat32, kFloat64 };

// A typed view of memory for point-to-point transfers (type-erased so the
// interface needs no template virtuals).
struct Buffer {
  void* data = nullptr;
  std::size_t count = 0;  // elements
  Dtype dtype = Dtype::kFloat32;
};
template <typename T>
Buffer buffer_of(std::span<T> s) {
  static_assert(std::is_same_v<std::remove_const_t<T>, float> ||
                std::is_same_v<std::remove_const_t<T>, double>);
  return {const_cast<std::remove_const_t<T>*>(s.data()), s.size(),
          std::is_same_v<std::remove_const_t<T>, float> ? Dtype::kFloat32 : Dtype::kFloat64};
}

// An asynchronous transfer. wait() blocks until it completes, and throws
// CommError when the peer is gone or the group's timeout passes. The memory
// must stay valid until wait() returns.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
};

// Every collective blocks until it completes on this rank, and throws
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
  // Point-to-point: a recv matches the send from `src` with the same tag;
  // transfers with the same peer and tag arrive in the order they were sent.
  virtual std::unique_ptr<Request> isend(Buffer b, int dst, int tag) = 0;
  virtual std::unique_ptr<Request> irecv(Buffer b, int src, int tag) = 0;

  // Numbers this group's point-to-point collectives, so one call's tags never
  // meet another's. Every rank issues collectives in the same order.
  unsigned next_sequence() { return sequence_++; }

 private:
  unsigned sequence_ = 0;
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
  // Every rank's `mine` (the same length on every rank) in rank order, on
  // every rank: result[r * mine.size() + k] is rank r's mine[k]. One SUM
  // allreduce in which each rank fills only its own block: adding zeros is
  // exact, so every value arrives bit for bit.
  template <typename T>
  std::vector<T> allgather(std::span<const T> mine) {
    const auto r = static_cast<std::size_t>(rank());
    std::vector<T> all(mine.size() * static_cast<std::size_t>(size()), T{0});
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()));
    allreduce_sum(std::span<T>(all));
    return all;
  }
  template <typename T>
  std::unique_ptr<Request> isend(std::span<T> data, int dst, int tag) {
    return impl_->isend(buffer_of(data), dst, tag);
  }
  template <typename T>
  std::unique_ptr<Request> irecv(std::span<T> data, int src, int tag) {
    return impl_->irecv(buffer_of(data), src, tag);
  }
  unsigned next_sequence() { return impl_->next_sequence(); }

 private:
  std::shared_ptr<GroupImpl> impl_;
};

}  // namespace hetrain::comm
