#include "hetrain/train/stop.h"

#include <signal.h>

#include <atomic>

#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {

constexpr std::array<int, 3> kStopSignals = {SIGTERM, SIGINT, SIGUSR1};

// The one piece of process-wide state: a signal handler can reach nothing
// else. Lock-free, so writing it in the handler is async-signal-safe.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void note(int sig) {
  int none = 0;
  if (g_stop_signal.compare_exchange_strong(none, sig)) return;  // the first signal names the request
  // Ctrl-C twice: the user does not want to wait for the step (a worker
  // stuck in a rendezvous would otherwise wait for its timeout). Slurm
  // never sends SIGINT, and may deliver SIGTERM twice (to srun and its tasks).
  if (sig == SIGINT) {
    ::signal(SIGINT, SIG_DFL);
    ::raise(SIGINT);
  }
}

}  // namespace

StopSignals::StopSignals() {
  struct sigaction sa {};
  sa.sa_handler = note;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    if (::sigaction(kStopSignals[i], &sa, &previous_[i]) != 0) throw Error("cannot install a signal handler");
  }
  // A launcher may start us with these blocked (`hetrain run`, the pool's job
  // script): a request that came while we were starting is pending, and is
  // noted now instead of killing a process that had not yet listened.
  const sigset_t ours = stop_signal_set();
  if (::pthread_sigmask(SIG_UNBLOCK, &ours, nullptr) != 0) throw Error("cannot unblock the stop signals");
}

// The mask stays unblocked: without a StopSignals a signal acts as usual.
// But a process that stopped on request is on its way out (exit code 6): a
// repeated request (Slurm may signal twice, `hetrain pool` repeats its own)
// is the same one, and must not turn that exit into a death by signal while
// libtorch's destructors run. Ctrl-C still ends it.
StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    if (stop_requested() && kStopSignals[i] != SIGINT) {
      ::signal(kStopSignals[i], SIG_IGN);
    } else {
      ::sigaction(kStopSignals[i], &previous_[i], nullptr);
    }
  }
}

int stop_signal() { return g_stop_signal.load(); }

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

}  // namespace hetrain::train
