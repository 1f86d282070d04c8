// Faults, end to end: real worker processes over real TCP, one of them killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli_fixture.h"

namespace {

using hetrain::testing::Cli;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kTimeoutSeconds = 20;                      // the workers' --timeout
constexpr auto kGrace = std::chrono::seconds(10);        // exit within the timeout plus this
constexpr auto kStartDeadline = std::chrono::seconds(120);
constexpr auto kPoll = std::chrono::milliseconds(50);

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string fmt_name(const char* what, int rank) { return std::string(what) + std::to_string(rank); }

// Starts one worker of the allreduce benchmark with torchrun's variables,
// its streams redirected to files.
pid_t spawn_worker(int rank, int n, int port, const std::vector<std::string>& args, const fs::path& out,
                   const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(o, 1);
  ::dup2(e, 2);
  std::vector<char*> argv{const_cast<char*>(HETRAIN_BINARY)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(HETRAIN_BINARY, argv.data());
  ::_exit(127);
}

// Waits for `pid` until `deadline`; kills it and returns -1 if it is still running then.
int wait_until(pid_t pid, Clock::time_point deadline) {
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Rank 1 of three is killed while the others are inside a ring allreduce of
// 64 MiB (it runs for many seconds; the kill comes 1 s after the first,
// small size finished). The survivors must each fail with a one-line
// communication error (exit code 4) naming a peer, within the timeout, not hang.
TEST_F(Cli, APeerDyingInTheMiddleOfARingAllreduceFailsTheOthersCleanly) {
  const int n = 3, port = free_port();
  const std::vector<std::string> args{"bench",   "allreduce", "--as-worker", "--algo",    "ring",
                                      "--sizes", "1K,64M",    "--iters",     "200",       "--timeout",
                                      std::to_string(kTimeoutSeconds)};
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pids.push_back(spawn_worker(r, n, port, args, dir_ / fmt_name("out", r), dir_ / fmt_name("err", r)));
  }
  // Rank 0 prints one line per finished size: after the 1K line all ranks are in the 64M loop.
  const auto start_deadline = Clock::now() + kStartDeadline;
  bool started = false;
  while (!started && Clock::now() < start_deadline) {
    const std::string out = slurp(dir_ / fmt_name("out", 0));
    started = out.find(" 1024 ") != std::string::npos;
    if (!started) std::this_thread::sleep_for(kPoll);
  }
  if (!started) {
    for (pid_t p : pids) ::kill(p, SIGKILL);
    for (pid_t p : pids) ::waitpid(p, nullptr, 0);
    FAIL() << "the benchmark did not reach the 64M allreduce: " << slurp(dir_ / fmt_name("err", 0));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(pids[1], SIGKILL);
  const auto killed_at = Clock::now();
  ::waitpid(pids[1], nullptr, 0);

  std::string named;
  for (int r : {0, 2}) {
    const int code = wait_until(pids[static_cast<std::size_t>(r)],
                                killed_at + std::chrono::seconds(kTimeoutSeconds) + kGrace);
    const std::string err = slurp(dir_ / fmt_name("err", r));
    EXPECT_EQ(code, 4) << "rank " << r << ": " << err;
    EXPECT_EQ(lines(err), 1u) << "rank " << r << ": " << err;
    EXPECT_EQ(err.rfind("hetrain: error: ", 0), 0u) << err;
    named += err;
  }
  EXPECT_NE(named.find("rank 1"), std::string::npos) << named;
}

}  // namespace
