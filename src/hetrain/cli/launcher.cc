#include "hetrain/cli/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "hetrain/comm/env.h"
#include "hetrain/common/error.h"
#include "hetrain/train/stop.h"

namespace hetrain::cli {
namespace {

constexpr int kPollMillis = 20;
constexpr std::size_t kReadChunk = 4096;  // bytes

// Relays the workers' stderr line by line, dropping lines another worker
// already printed: an error that every rank hits (a missing file, a bad
// flag) reaches the user once.
class StderrRelay {
 public:
  void add(int fd) { fds_.push_back(fd), partial_.emplace_back(); }
  bool open() const {
    for (int fd : fds_)
      if (fd >= 0) return true;
    return false;
  }
  // Reads whatever is ready within `millis`.
  void pump(int millis) {
    std::vector<pollfd> p;
    for (int fd : fds_) p.push_back({fd, POLLIN, 0});
    if (::poll(p.data(), p.size(), millis) <= 0) return;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (fds_[i] < 0 || (p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[kReadChunk];
      const ssize_t n = ::read(fds_[i], buf, sizeof(buf));
      if (n <= 0) {
        flush(i);
        ::close(fds_[i]);
        fds_[i] = -1;
        continue;
      }
      partial_[i].append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = partial_[i].find('\n')) != std::string::npos;) {
        emit(partial_[i].substr(0, nl + 1));
        partial_[i].erase(0, nl + 1);
      }
    }
  }
  void drain() {
    while (open()) pump(kPollMillis);
  }

 private:
  void flush(std::size_t i) {
    if (!partial_[i].empty()) emit(partial_[i] + "\n");
    partial_[i].clear();
  }
  void emit(const std::string& line) {
    if (!seen_.insert(line).second) return;
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  std::vector<int> fds_;  // -1 once closed (poll ignores negative fds)
  std::vector<std::string> partial_;
  std::set<std::string> seen_;
};

[[noreturn]] void exec_worker(const LaunchPlan& plan, int rank, std::uint16_t port, int attempt, int err_fd) {
  // Die with the launcher: no orphaned workers holding ports.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::dup2(err_fd, STDERR_FILENO);
  ::close(err_fd);
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
  ::setenv("MASTER_ADDR", plan.master_addr.c_str(), 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  // torchrun's variables, but the banner names the launcher that set them.
  ::setenv(comm::kLauncherVariable, comm::kRunLauncher, 1);
  // As torchrun: a restarted worker resumes from its checkpoint.
  ::setenv("TORCHELASTIC_RESTART_COUNT", std::to_string(attempt).c_str(), 1);
  // The job's name in the store (comm/env.h): ours, unique on this host.
  ::setenv("TORCHELASTIC_RUN_ID", fmt::format("hetrain-{}-{}", ::getppid(), port).c_str(), 1);
  std::vector<char*> argv;
  std::string self = "hetrain";
  argv.push_back(self.data());
  std::vector<std::string> args = plan.worker_args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "hetrain: error: cannot start worker %d: exec failed\n", rank);
  std::_Exit(static_cast<int>(ExitCode::kWorker));
}

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "stopped";
}

}  // namespace

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw CommError("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw CommError("cannot find a free TCP port on 127.0.0.1");
  return ntohs(addr.sin_port);
}

namespace {

// How one attempt ended: the rank that failed first (-1: none) and its
// status; whether the workers stopped on request (exit code 6, not a failure).
struct AttemptEnd {
  int first_rank = -1;
  int first_status = 0;
  bool stopped = false;
};

bool stopped_on_request(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == static_cast<int>(ExitCode::kStopped);
}

std::chrono::steady_clock::time_point after_seconds(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

void signal_all(const std::vector<pid_t>& pids, int sig) {
  for (pid_t p : pids)
    if (p > 0) ::kill(p, sig);
}

// Starts the workers of one attempt, waits for all of them, and stops the
// rest as soon as one fails.
AttemptEnd run_attempt(const LaunchPlan& plan, int attempt, std::uint16_t port) {
  std::vector<pid_t> pids(static_cast<std::size_t>(plan.nproc), -1);
  StderrRelay relay;
  std::fflush(nullptr);
  for (int r = 0; r < plan.nproc; ++r) {
    int fds[2];
    const bool piped = ::pipe2(fds, O_CLOEXEC) == 0;
    // The worker starts with the stop signals blocked (inherited across exec):
    // one sent before it listens waits for it (train/stop.h) instead of
    // killing it. Ours are held for the fork only.
    const sigset_t stop_set = train::stop_signal_set();
    sigset_t before;
    ::pthread_sigmask(SIG_BLOCK, &stop_set, &before);
    const pid_t pid = piped ? ::fork() : -1;
    if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) {
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
      throw Error("cannot start a worker process (pipe or fork failed)");
    }
    if (pid == 0) exec_worker(plan, r, port, attempt, fds[1]);
    ::close(fds[1]);
    relay.add(fds[0]);
    pids[static_cast<std::size_t>(r)] = pid;
  }

  AttemptEnd end;
  int running = plan.nproc;
  std::chrono::steady_clock::time_point kill_at{};
  bool terminated = false, killed = false;
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      --running;
      int rank = -1;
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] == pid) rank = static_cast<int>(i), pids[i] = -1;
      }
      const bool stopped = stopped_on_request(status);
      end.stopped = end.stopped || stopped;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !stopped;
      if (failed && end.first_rank < 0) end.first_rank = rank, end.first_status = status;
      continue;
    }
    if (end.first_rank >= 0 && !killed) {
      // One worker failed: the others would wait for it until the timeout,
      // and cannot finish a step to stop at (SIGTERM would ask for that).
      signal_all(pids, SIGKILL);
      killed = true;
    }
    if (!terminated && train::stop_requested()) {
      // We were asked to stop: the workers stop after a step, with a
      // checkpoint (train/stop.h), as if Slurm had signalled them.
      signal_all(pids, SIGTERM);
      terminated = true;
      kill_at = after_seconds(plan.grace_seconds);
    }
    if (terminated && !killed && std::chrono::steady_clock::now() >= kill_at) {
      signal_all(pids, SIGKILL);
      killed = true;
    }
    relay.pump(kPollMillis);
  }
  relay.drain();
  return end;
}

int exit_code_of(const AttemptEnd& end) {
  const int status = end.first_status;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : static_cast<int>(ExitCode::kWorker);
  return code == 0 ? static_cast<int>(ExitCode::kWorker) : code;
}

// Usage and data errors name their cause, were relayed already, and would
// only happen again after a restart.
bool reported_itself(const AttemptEnd& end) {
  const int code = exit_code_of(end);
  return WIFEXITED(end.first_status) &&
         (code == static_cast<int>(ExitCode::kUsage) || code == static_cast<int>(ExitCode::kData));
}

}  // namespace

int launch(const LaunchPlan& plan) {
  HETRAIN_ENFORCE_LT(0, plan.nproc);
  HETRAIN_ENFORCE_LE(0, plan.max_restarts);
  const train::StopSignals stop_signals;  // SIGTERM, SIGINT: passed on to the workers
  for (int attempt = 0;; ++attempt) {
    // A fresh port per attempt: the dead group's store may linger in TIME_WAIT.
    const std::uint16_t port = plan.master_port != 0 ? plan.master_port : free_port();
    const AttemptEnd end = run_attempt(plan, attempt, port);
    // A stop on request is not a failure: never restarted.
    if (end.first_rank < 0) return end.stopped ? static_cast<int>(ExitCode::kStopped) : 0;
    if (reported_itself(end)) return exit_code_of(end);
    if (attempt < plan.max_restarts && !train::stop_requested()) {
      std::fprintf(stderr, "hetrain: worker %d failed first (%s); restarting all workers (restart %d of %d)\n",
                   end.first_rank, describe(end.first_status).c_str(), attempt + 1, plan.max_restarts);
      continue;
    }
    std::fprintf(stderr, "hetrain: error: worker %d failed first (%s); the others were stopped%s\n",
                 end.first_rank, describe(end.first_status).c_str(),
                 plan.max_restarts > 0 ? fmt::format(" (after {} restarts)", plan.max_restarts).c_str() : "");
    return exit_code_of(end);
  }
}

}  // namespace hetrain::cli
