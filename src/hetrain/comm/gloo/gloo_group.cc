#include "hetrain/comm/gloo/gloo_group.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "hetrain/common/error.h"

namespace hetrain::comm {

struct InProcessRendezvous::State {
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
};
InProcessRendezvous::InProcessRendezvous() : state_(std::make_unique<State>()) {}
InProcessRendezvous::~InProcessRendezvous() = default;

namespace {

template <typename Fn>
auto translate(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw CommError(fmt::format("{}: {}", what, first_line(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    throw CommError(fmt::format("{}: {}", what, first_line(e.what())));
  }
}

at::Tensor view_of(std::span<float> s) {
  return at::from_blob(s.data(), {static_cast<int64_t>(s.size())}, at::kFloat);
}
at::Tensor view_of(std::span<double> s) {
  return at::from_blob(s.data(), {static_cast<int64_t>(s.size())}, at::kDouble);
}

at::Tensor view_of(Buffer b) {
  return at::from_blob(b.data, {static_cast<int64_t>(b.count)},
                       b.dtype == Dtype::kFloat32 ? at::kFloat : at::kDouble);
}

class GlooRequest final : public Request {
 public:
  GlooRequest(c10::intrusive_ptr<c10d::Work> work, const char* what, std::chrono::milliseconds timeout)
      : work_(std::move(work)), what_(what), timeout_(timeout) {}
  void wait() override {
    if (!work_) return;
    translate(what_, [&] { return work_->wait(timeout_); });
    work_.reset();
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  const char* what_;
  std::chrono::milliseconds timeout_;  // the group's: a dead peer fails the wait, never hangs it
};

// c10d 1.13's store client reads its answers with a blocking recv and no timeout: TCPStore::wait blocks past
// its timeout when a peer never arrives (seen under Slurm: a rank stopped while it was starting), and the
// client's first request blocks forever when the one-threaded server is stalled by junk on its port (a
// request cut short and held open). Nothing can wake the blocked thread. So connecting has a watch of its
// own, on a thread, over both phases (reaching the store, then building the group), each with its own
// deadline: past it, it ends the process with the one line and the exit code of a CommError; once a stop is
// requested (the `stop` predicate) it ends it with the exit code of a stop on request, since a rank that has
// not connected has trained nothing and has nothing to save, and the peer it waits for may have left for the
// same request (docs/errors.md).
class ConnectWatch {
 public:
  // c10d's own timeout gets this long to fail first, with its clearer message.
  static constexpr std::chrono::seconds kGrace{10};
  // How often the stop predicate is read: prompt next to Slurm's KillWait (30 s), and idle otherwise.
  static constexpr std::chrono::milliseconds kStopPoll{100};

  // The first phase, reaching the store, starts now.
  ConnectWatch(std::chrono::milliseconds timeout, int rank, std::function<bool()> stop, std::string what,
               std::string likely_cause)
      : timeout_(timeout),
        rank_(rank),
        stop_(std::move(stop)),
        what_(std::move(what)),
        likely_cause_(std::move(likely_cause)),
        deadline_(std::chrono::steady_clock::now() + timeout + kGrace),
        thread_([this] { watch(); }) {}
  ConnectWatch(const ConnectWatch&) = delete;
  ConnectWatch& operator=(const ConnectWatch&) = delete;
  ~ConnectWatch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // The next phase starts: from now on it has `timeout` + kGrace, and its own error line.
  void next_phase(std::string what, std::string likely_cause) {
    std::lock_guard<std::mutex> lock(mu_);
    what_ = std::move(what);
    likely_cause_ = std::move(likely_cause);
    deadline_ = std::chrono::steady_clock::now() + timeout_ + kGrace;
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, kStopPoll, [this] { return done_; })) {
      if (stop_ && stop_()) {
        end(ExitCode::kStopped, fmt::format("hetrain: rank {} stopped on request while connecting to the other "
                                            "workers, before any step (nothing new to save)", rank_));
      }
      if (std::chrono::steady_clock::now() >= deadline_) {
        end(ExitCode::kComm,
            fmt::format("hetrain: error: rank {}: {} within {} s ({})", rank_, what_,
                        std::chrono::duration_cast<std::chrono::seconds>(timeout_).count(), likely_cause_));
      }
    }
  }
  [[noreturn]] static void end(ExitCode code, const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    std::_Exit(static_cast<int>(code));
  }

  std::chrono::milliseconds timeout_;
  int rank_;
  std::function<bool()> stop_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string what_;          // what did not happen in this phase, for the error line
  std::string likely_cause_;  // and why it most likely did not
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;  // last: it starts once the members above exist
};

class GlooGroup final : public GroupImpl {
 public:
  GlooGroup(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout,
            std::shared_ptr<::gloo::transport::Device> device)
      : rank_(rank), size_(size), timeout_(timeout) {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(std::move(device));
    // One Gloo worker thread: collectives are issued one at a time and the
    // cores are better spent on compute.
    options->threads = 1;
    pg_ = translate("cannot connect the Gloo process group",
                    [&] { return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options); });
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allreduce_sum(std::span<float> d) override { allreduce(view_of(d)); }
  void allreduce_sum(std::span<double> d) override { allreduce(view_of(d)); }
  void broadcast(std::span<float> d, int root) override {
    if (d.empty()) return;
    std::vector<at::Tensor> t{view_of(d)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    translate("broadcast failed", [&] {
      pg_->broadcast(t, opts)->wait();
      return 0;
    });
  }
  std::unique_ptr<Request> isend(Buffer b, int dst, int tag) override {
    if (b.count == 0) return std::make_unique<GlooRequest>(c10::intrusive_ptr<c10d::Work>(), "send", timeout_);
    std::vector<at::Tensor> t{view_of(b)};
    return std::make_unique<GlooRequest>(translate("send failed", [&] { return pg_->send(t, dst, tag); }),
                                         "send failed", timeout_);
  }
  std::unique_ptr<Request> irecv(Buffer b, int src, int tag) override {
    if (b.count == 0) return std::make_unique<GlooRequest>(c10::intrusive_ptr<c10d::Work>(), "recv", timeout_);
    std::vector<at::Tensor> t{view_of(b)};
    return std::make_unique<GlooRequest>(translate("recv failed", [&] { return pg_->recv(t, src, tag); }),
                                         "recv failed", timeout_);
  }
  void barrier() override {
    translate("barrier failed", [&] {
      pg_->barrier()->wait();
      return 0;
    });
  }

 private:
  void allreduce(at::Tensor t) {
    if (t.numel() == 0) return;
    std::vector<at::Tensor> ts{std::move(t)};
    translate("allreduce failed", [&] {
      pg_->allreduce(ts)->wait();
      return 0;
    });
  }
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// This host's address on the route to `host` (the kernel picks it for a
// connected UDP socket; nothing is sent). "" when `host` does not resolve.
std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  constexpr const char* kAnyPort = "9";  // discard: any port routes the same
  if (::getaddrinfo(host.c_str(), kAnyPort, &hints, &found) != 0 || found == nullptr) return "";
  std::string out;
  const int fd = ::socket(found->ai_family, SOCK_DGRAM, 0);
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* a = local.ss_family == AF_INET6
                        ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                        : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (::inet_ntop(local.ss_family, a, text, sizeof(text)) != nullptr) out = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return out;
}

std::shared_ptr<::gloo::transport::Device> make_device(const std::string& master_addr) {
  return translate("cannot create the Gloo TCP device", [&] {
    // Same variable as PyTorch: pins Gloo to one network interface.
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
    }
    // A one-machine run stays on loopback; otherwise Gloo listens on the
    // address that reaches MASTER_ADDR, not on whatever the host name says.
    if (is_loopback(master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    if (const auto local = local_address_towards(master_addr); !local.empty()) {
      return c10d::ProcessGroupGloo::createDeviceForHostname(local);
    }
    return c10d::ProcessGroupGloo::createDefaultDevice();
  });
}

}  // namespace

namespace {

// The store's server port must be free. c10d would find out too, but in
// several log lines and one long message; say it in one line first.
void check_port_free(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;  // c10d will report whatever is wrong
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));  // as c10d does
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(port);
  const bool in_use = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno == EADDRINUSE;
  ::close(fd);
  if (in_use) {
    throw CommError(fmt::format("port {} is already in use on this machine (choose another with --master-port "
                                "or MASTER_PORT)",
                                port));
  }
}

}  // namespace

namespace {

// c10d 1.13's store server answers one request at a time on one thread, and
// a connection that sends half a request and goes quiet blocks that thread
// for good; the server's destructor then joins it forever. So rank 0 starts
// the server on its own and never destroys it (the process's exit ends it):
// junk on the port can at worst make the rendezvous time out, with one line,
// and never keeps a worker from exiting.
void serve_store(const WorldInfo& w, std::chrono::milliseconds timeout, const std::string& what) {
  check_port_free(w.master_port);
  c10d::TCPStoreOptions opts;
  opts.port = w.master_port;
  opts.isServer = true;
  opts.waitWorkers = false;  // the workers meet through the client stores below
  opts.timeout = timeout;
  auto server = translate(what.c_str(), [&] { return c10::make_intrusive<c10d::TCPStore>(w.master_addr, opts); });
  server.release();  // deliberately never destroyed: see above
}

}  // namespace

Group connect_gloo(const WorldInfo& w, std::chrono::milliseconds timeout, std::function<bool()> stop) {
  const std::string what =
      fmt::format("rendezvous at {}:{} failed (rank {} of {}{})", w.master_addr, w.master_port, w.rank,
                  w.world_size, w.agent_store ? ", torchrun's agent store" : "");
  ConnectWatch watch(timeout, w.rank, std::move(stop),
                     fmt::format("the store at {}:{} did not answer", w.master_addr, w.master_port),
                     "is something else on that port?");
  // Under torchrun's agent store the port is the agent's: nobody here serves.
  if (w.rank == 0 && !w.agent_store) serve_store(w, timeout, what);
  c10d::TCPStoreOptions opts;
  opts.port = w.master_port;
  opts.isServer = false;
  opts.numWorkers = static_cast<std::size_t>(w.world_size);
  opts.waitWorkers = true;
  opts.timeout = timeout;
  auto store = translate(what.c_str(), [&]() -> c10::intrusive_ptr<c10d::Store> {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(w.master_addr, opts);
    // As PyTorch's workers do: a restarted group never reads a dead one's keys.
    if (w.agent_store) {
      return c10::make_intrusive<c10d::PrefixStore>(fmt::format("/worker/attempt_{}", w.restart_count), tcp);
    }
    // A second job that reached this port finds none of this job's keys.
    if (!w.job_id.empty()) return c10::make_intrusive<c10d::PrefixStore>("/hetrain/" + w.job_id, tcp);
    return tcp;
  });
  watch.next_phase("the Gloo group was not connected", "a peer never arrived");
  try {
    return Group(std::make_shared<GlooGroup>(store, w.rank, w.world_size, timeout, make_device(w.master_addr)));
  } catch (const CommError& e) {
    throw CommError(fmt::format("{}: {}", what, e.what()));  // say where it met the others
  }
}

Group connect_gloo(InProcessRendezvous& r, int rank, int size, std::chrono::milliseconds timeout) {
  return Group(std::make_shared<GlooGroup>(r.state().store, rank, size, timeout, make_device("127.0.0.1")));
}

}  // namespace hetrain::comm
