#include "hetrain/pool/command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "hetrain/common/error.h"

namespace hetrain::pool {
namespace {

constexpr std::size_t kReadChunk = 4096;  // bytes
constexpr int kExecFailed = 127;          // as a shell says "not found"

[[noreturn]] void exec_child(const std::vector<std::string>& argv, int out_fd) {
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(out_fd, STDERR_FILENO);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::_Exit(kExecFailed);
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, double timeout_seconds) {
  HETRAIN_ENFORCE_LT(0u, argv.size());
  const std::string what = fmt::format("{}", fmt::join(argv, " "));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error("cannot run " + what + ": pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot run " + what + ": fork failed");
  if (pid == 0) exec_child(argv, fds[1]);
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  CommandResult r;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      ::close(fds[0]);
      throw Error(fmt::format("{} did not finish within {} s", what, timeout_seconds));
    }
    char buf[kReadChunk];
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == kExecFailed && r.output.empty()) throw Error("cannot run " + argv[0] + ": not found");
  return r;
}

}  // namespace hetrain::pool
