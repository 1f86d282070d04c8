// The fixture of the end-to-end tests: runs the real `hetrain` binary in a
// per-test temporary directory and captures its exit code and streams.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hetrain::testing {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hetrain_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Runs `env hetrain args`, capturing both streams. A hard `timeout` keeps
  // a hang from blocking the suite: it shows as exit code 124.
  Outcome hetrain(const std::string& args, const std::string& env = "") const {
    const auto out = dir_ / "stdout", err = dir_ / "stderr";
    const std::string cmd = "timeout 300 env " + env + " " + HETRAIN_BINARY + " " + args + " >" +
                            out.string() + " 2>" + err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());
    Outcome o;
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = slurp(out);
    o.err = slurp(err);
    return o;
  }
  static std::size_t lines(const std::string& s) {
    std::size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
  }
  fs::path dir_;
};

}  // namespace hetrain::testing
