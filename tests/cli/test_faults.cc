// Faults, end to end: real worker processes over real TCP, one of them killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
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

std::string fmt_join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += " " + a;
  return out;
}

using Env = std::vector<std::pair<std::string, std::string>>;

// Spawns `hetrain ARGS` with `env` added and its streams redirected to files.
pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err, const Env& env = {}) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
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

// Starts rank `rank` of `n` with torchrun's variables, as another launcher would.
pid_t spawn_worker(int rank, int n, int port, const std::vector<std::string>& args, const fs::path& out,
                   const fs::path& err) {
  const std::string r = std::to_string(rank);
  return spawn(args, out, err,
               {{"RANK", r}, {"LOCAL_RANK", r}, {"WORLD_SIZE", std::to_string(n)}, {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(port)}});
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
// small size finished; the ranks line up between calls with a small ring
// allreduce too, so the kill always lands in a ring). The survivors must each
// fail with a one-line communication error (exit code 4) naming a peer,
// within the timeout, not hang.
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

// The child of `launcher` whose environment says RANK=rank (0 if none yet).
pid_t worker_of(pid_t launcher, int rank) {
  const std::string want = "RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state, ppid;
    stat >> pid >> comm >> state >> ppid;
    if (ppid != std::to_string(launcher)) continue;
    std::ifstream env(entry.path() / "environ");
    for (std::string var; std::getline(env, var, '\0');)
      if (var == want) return std::stoi(name);
  }
  return 0;
}

// "epoch step index..." lines of every rank's sample log PREFIX.rank*, as
// (epoch, step) -> indices.
std::map<std::pair<int, int>, std::vector<int>> read_sample_logs(const fs::path& dir, const std::string& prefix) {
  std::map<std::pair<int, int>, std::vector<int>> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(prefix + ".rank", 0) != 0) continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::istringstream ls(line);
      int epoch = 0, step = 0, index = 0;
      ls >> epoch >> step;
      auto& v = out[{epoch, step}];
      while (ls >> index) v.push_back(index);
    }
  }
  return out;
}

constexpr int kTrainSamples = 2000;
// Every flag of these runs but --model and --sample-cost-ms (a flag may be given once).
const std::vector<std::string> kQuick{"--data",     "synthetic", "--synthetic-train", std::to_string(kTrainSamples),
                                      "--synthetic-test", "200",   "--threads",         "1",
                                      "-b",         "64",        "--policy",          "adaptive"};
const std::vector<std::string> kSlowQuick = {"--model", "mlp", "--sample-cost-ms", "5"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// A resumed run that splits every step as the uninterrupted run did (same
// workers, same shares) does the same float operations: its losses are
// bitwise the same. With other splits (another worker count, or the adaptive
// policy, which splits by measured times, moving differently) the float sums
// are grouped differently: the losses agree to float32 rounding grown over the
// remaining steps (measured about 1e-7), not bitwise. A lost optimizer state,
// a skipped or repeated step moves them by 1e-3 or more.
constexpr double kResumedLossTolerance = 1e-5;  // relative, per step

// Every step a resumed run made (from `from` on) has the loss the
// uninterrupted run `whole` had at that step.
void expect_same_losses(const nlohmann::json& resumed, const nlohmann::json& whole, int from, int n) {
  const auto got = resumed.at("steps").at("loss").get<std::vector<double>>();
  const auto want = whole.at("steps").at("loss").get<std::vector<double>>();
  ASSERT_EQ(got.size() + static_cast<std::size_t>(from), want.size()) << n << " workers, resumed at " << from;
  const auto& split = resumed.at("allocation");
  const auto& whole_split = whole.at("allocation");
  const bool same_splits = std::equal(split.begin(), split.end(), whole_split.begin() + from);
  const double tolerance = same_splits ? 0.0 : kResumedLossTolerance;
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = want[i + static_cast<std::size_t>(from)];
    worst = std::max(worst, std::abs(got[i] - w) / std::abs(w));
    ASSERT_LE(std::abs(got[i] - w), tolerance * std::abs(w))
        << "step " << i + static_cast<std::size_t>(from) << " resumed on " << n << " workers: loss " << got[i]
        << ", uninterrupted " << w << " (final " << got.back() << " vs " << want.back() << ")";
  }
  std::cout << "resumed at step " << from << " on " << n << " workers: " << got.size() << " steps, "
            << (same_splits ? "the same splits, bitwise" : "other splits, within tolerance")
            << ": largest relative loss gap " << worst << ", final loss " << got.back() << " vs "
            << want.back() << "\n";
}

// Kill -9 one of four workers mid-epoch: the run stops within the timeout
// plus a few seconds, names the rank, and exits non-zero. Resuming from the
// last checkpoint on 3, 4 or 5 workers finishes the epoch; across the killed
// run (up to its checkpoint) and the resumed one every sample of the epoch is
// trained on exactly once (the workers' own logs of the indices), and every
// resumed step's loss, the final one included, is the uninterrupted run's.
TEST_F(Cli, AKilledWorkerStopsTheRunAndAResumeOnAnyWorkerCountUsesEverySampleOnce) {
  const fs::path ck = dir_ / "ck";
  const int timeout = 10;
  const pid_t launcher =
      spawn(with(with(with({"run", "-n", "4"}, kQuick), kSlowQuick),
                 {"--checkpoint", ck.string(), "--checkpoint-every", "4", "--sample-log", (dir_ / "first").string(),
                  "--timeout", std::to_string(timeout)}),
            dir_ / "out", dir_ / "err");
  // Kill once the first checkpoint exists and a few more steps ran after it.
  const auto deadline = Clock::now() + kStartDeadline;
  bool ready = false;
  while (!ready && Clock::now() < deadline) {
    const auto log = read_sample_logs(dir_, "first");
    ready = fs::exists(ck / "checkpoint.pt") && log.size() >= 4 * 1 + 6;
    if (!ready) std::this_thread::sleep_for(kPoll);
  }
  const pid_t victim = worker_of(launcher, 2);
  ASSERT_TRUE(ready && victim > 0) << slurp(dir_ / "err");
  ASSERT_LT(read_sample_logs(dir_, "first").size(), 2000u / 64) << "the epoch ended before the kill";
  ::kill(victim, SIGKILL);
  const int code = wait_until(launcher, Clock::now() + std::chrono::seconds(timeout + 5));
  const std::string err = slurp(dir_ / "err");
  EXPECT_NE(code, 0) << err;
  EXPECT_NE(code, -1) << "the run did not stop within the timeout + 5 s";
  EXPECT_NE(err.find("worker 2"), std::string::npos) << err;
  EXPECT_EQ(lines(err), 1u) << err;

  const auto first = read_sample_logs(dir_, "first");
  const fs::path whole_path = dir_ / "whole.json";
  const auto whole_run = hetrain("run -n 4 " + fmt_join(kQuick) + fmt_join(kSlowQuick) + " --metrics " + whole_path.string());
  ASSERT_EQ(whole_run.code, 0) << whole_run.err;
  const auto whole = nlohmann::json::parse(slurp(whole_path));
  for (int n : {3, 4, 5}) {
    const std::string prefix = "resumed" + std::to_string(n);
    const fs::path metrics = dir_ / (prefix + ".json");
    const auto o = hetrain("run -n " + std::to_string(n) + " " + fmt_join(kQuick) + fmt_join(kSlowQuick) + " --resume " + ck.string() +
                           " --sample-log " + (dir_ / prefix).string() + " --metrics " + metrics.string());
    ASSERT_EQ(o.code, 0) << o.err;
    const auto doc = nlohmann::json::parse(slurp(metrics));
    const int from = doc.at("resumed_from").at("step").get<int>();
    EXPECT_EQ(doc.at("resumed_from").at("world_size").get<int>(), 4);
    std::vector<int> uses(kTrainSamples, 0);
    for (const auto& [key, indices] : first)
      if (key.first == 0 && key.second < from)
        for (int i : indices) ++uses.at(static_cast<std::size_t>(i));
    for (const auto& [key, indices] : read_sample_logs(dir_, prefix)) {
      EXPECT_GE(key.second, from);
      for (int i : indices) ++uses.at(static_cast<std::size_t>(i));
    }
    for (int i = 0; i < kTrainSamples; ++i) ASSERT_EQ(uses[static_cast<std::size_t>(i)], 1) << "sample " << i << ", " << n << " workers";
    expect_same_losses(doc, whole, from, n);
  }
}

// A write that died before its rename leaves only a temporary file: the
// previous checkpoint still loads. A damaged or foreign checkpoint is a
// one-line data error (exit code 3), never a crash.
TEST_F(Cli, AnInterruptedCheckpointWriteLeavesThePreviousOneAndBadCheckpointsAreDataErrors) {
  const fs::path ck = dir_ / "ck";
  const std::string quick = fmt_join(kQuick);
  ASSERT_EQ(hetrain("run -n 2 --model mlp " + quick + " --max-steps 6 --checkpoint " + ck.string()).code, 0);
  std::ofstream(ck / "checkpoint.pt.tmp.4242") << "half a checkpoint";  // what a crash mid-write leaves
  const auto resumed = hetrain("run -n 2 --model mlp " + quick + " --resume " + ck.string() + " --max-steps 8");
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("step 6"), std::string::npos) << resumed.out;

  const auto other_model = hetrain("run -n 2 --model cnn " + quick + " --resume " + ck.string());
  EXPECT_EQ(other_model.code, 3) << other_model.err;
  EXPECT_EQ(lines(other_model.err), 1u) << other_model.err;
  EXPECT_NE(other_model.err.find("model mlp"), std::string::npos) << other_model.err;

  const auto size = fs::file_size(ck / "checkpoint.pt");
  fs::resize_file(ck / "checkpoint.pt", size / 2);
  const auto truncated = hetrain("run -n 2 --model mlp " + quick + " --resume " + ck.string());
  EXPECT_EQ(truncated.code, 3) << truncated.err;
  EXPECT_EQ(lines(truncated.err), 1u) << truncated.err;

  const auto missing = hetrain("run -n 2 --model mlp " + quick + " --resume " + (dir_ / "nothing").string());
  EXPECT_EQ(missing.code, 3) << missing.err;
  EXPECT_EQ(lines(missing.err), 1u) << missing.err;
}

// Workers started with different options are caught before the first step,
// on every rank, with a one-line usage error.
TEST_F(Cli, WorkersWithDifferentConfigurationsStopAtTheStart) {
  const int port = free_port();
  const std::vector<std::string> base = with(with({"worker"}, kQuick), {"--model", "mlp", "--timeout", "20"});
  const pid_t a = spawn_worker(0, 2, port, with(base, {"--seed", "1"}), dir_ / "out0", dir_ / "err0");
  const pid_t b = spawn_worker(1, 2, port, with(base, {"--seed", "2"}), dir_ / "out1", dir_ / "err1");
  const auto deadline = Clock::now() + kStartDeadline;
  for (auto [pid, r] : {std::pair{a, 0}, std::pair{b, 1}}) {
    const int code = wait_until(pid, deadline);
    const std::string err = slurp(dir_ / fmt_name("err", r));
    EXPECT_EQ(code, 2) << err;
    EXPECT_EQ(lines(err), 1u) << err;
    EXPECT_NE(err.find("different configuration"), std::string::npos) << err;
  }
}

// A peer dying while buckets are being reduced during backward (overlap, 8
// buckets of the mlp): the training threads of the others get the failure
// at the optimizer step as a one-line communication error, not a hang.
TEST_F(Cli, ABucketAllreduceThatFailsSurfacesAsAnErrorNotAHang) {
  const int n = 3, port = free_port();
  const std::vector<std::string> args =
      with(with({"worker"}, kQuick), {"--model", "mlp", "--bucket-mb", "0.1", "--sample-cost-ms", "2",
                                      "--epochs", "50", "--timeout", std::to_string(kTimeoutSeconds),
                                      "--sample-log", (dir_ / "log").string()});
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) pids.push_back(spawn_worker(r, n, port, args, dir_ / fmt_name("out", r), dir_ / fmt_name("err", r)));
  const auto deadline = Clock::now() + kStartDeadline;
  while (read_sample_logs(dir_, "log").size() < 5 && Clock::now() < deadline) std::this_thread::sleep_for(kPoll);
  ::kill(pids[2], SIGKILL);
  const auto killed_at = Clock::now();
  ::waitpid(pids[2], nullptr, 0);
  for (int r : {0, 1}) {
    const int code = wait_until(pids[static_cast<std::size_t>(r)],
                                killed_at + std::chrono::seconds(kTimeoutSeconds) + kGrace);
    const std::string err = slurp(dir_ / fmt_name("err", r));
    EXPECT_EQ(code, 4) << "rank " << r << ": " << err;
    EXPECT_EQ(lines(err), 1u) << "rank " << r << ": " << err;
  }
}

// A worker killed -9 while it writes a checkpoint (the resnet's checkpoint is
// ~43 MB, written every step: the temporary file is caught within a few
// steps) leaves the previous checkpoint, which a resumed run loads.
TEST_F(Cli, AKillDuringACheckpointWriteLeavesThePreviousCheckpointLoadable) {
  const fs::path ck = dir_ / "ck";
  const std::vector<std::string> flags = with(kQuick, {"--model", "resnet"});
  const pid_t pid = spawn_worker(
      0, 1, free_port(),
      with(with({"worker"}, flags), {"--checkpoint", ck.string(), "--checkpoint-every", "1", "--max-steps", "60"}),
      dir_ / "out", dir_ / "err");
  auto writing = [&] {
    if (!fs::exists(ck / "checkpoint.pt")) return false;  // there must be a previous one
    for (const auto& e : fs::directory_iterator(ck))
      if (e.path().filename().string().rfind("checkpoint.pt.tmp", 0) == 0) return true;
    return false;
  };
  const auto deadline = Clock::now() + kStartDeadline;
  bool caught = false;
  int status = 0;
  while (!caught && Clock::now() < deadline && ::waitpid(pid, &status, WNOHANG) == 0) {
    caught = fs::exists(ck) && writing();
    if (caught) ::kill(pid, SIGKILL);
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!caught) ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(caught) << "never saw a checkpoint being written: " << slurp(dir_ / "err");
  const auto o = hetrain("worker " + fmt_join(flags) + " --resume " + ck.string() + " --max-steps 62",
                         "RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("resumed from"), std::string::npos) << o.out;
}

}  // namespace
