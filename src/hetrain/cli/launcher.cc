#include "hetrain/cli/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "hetrain/common/error.h"

namespace hetrain::cli {
namespace {

constexpr auto kReapPoll = std::chrono::milliseconds(20);

[[noreturn]] void exec_worker(const LaunchPlan& plan, int rank, std::uint16_t port) {
  // Die with the launcher: no orphaned workers holding ports.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
  ::setenv("MASTER_ADDR", plan.master_addr.c_str(), 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  ::setenv("HETRAIN_LAUNCHED", "1", 1);
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
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
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

int launch(const LaunchPlan& plan) {
  HETRAIN_ENFORCE_LT(0, plan.nproc);
  const std::uint16_t port = plan.master_port != 0 ? plan.master_port : free_port();
  std::vector<pid_t> pids(static_cast<std::size_t>(plan.nproc), -1);
  std::fflush(nullptr);
  for (int r = 0; r < plan.nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) if (p > 0) ::kill(p, SIGKILL);
      throw Error("cannot fork a worker process");
    }
    if (pid == 0) exec_worker(plan, r, port);
    pids[static_cast<std::size_t>(r)] = pid;
  }

  int first_rank = -1, first_status = 0, running = plan.nproc;
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
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && first_rank < 0) {
        first_rank = rank, first_status = status;
      }
      continue;
    }
    if (first_rank >= 0 && !terminated) {
      // One worker failed: the others would wait for it until the timeout.
      for (pid_t p : pids) if (p > 0) ::kill(p, SIGTERM);
      terminated = true;
      kill_at = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(plan.grace_seconds));
    }
    if (terminated && !killed && std::chrono::steady_clock::now() >= kill_at) {
      for (pid_t p : pids) if (p > 0) ::kill(p, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(kReapPoll);
  }
  if (first_rank < 0) return 0;
  const int code = WIFEXITED(first_status) ? WEXITSTATUS(first_status) : static_cast<int>(ExitCode::kWorker);
  // Usage and data errors are the same on every rank and rank 0 printed
  // them (the others stay quiet under `run`, see args.cc).
  const bool reported = first_rank == 0 && WIFEXITED(first_status) && (code == static_cast<int>(ExitCode::kUsage) ||
                                                     code == static_cast<int>(ExitCode::kData));
  if (!reported) {
    std::fprintf(stderr, "hetrain: error: worker %d failed first (%s); the others were stopped\n",
                 first_rank, describe(first_status).c_str());
  }
  return code == 0 ? static_cast<int>(ExitCode::kWorker) : code;
}

}  // namespace hetrain::cli
