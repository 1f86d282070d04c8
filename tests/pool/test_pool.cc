// The controller's torch-free parts: job files, the state file, what is
// submitted, and running a command with a timeout. The controller against a
// real Slurm: tests/pool/pool_slurm_test.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hetrain/common/error.h"
#include "hetrain/pool/command.h"
#include "hetrain/pool/job_script.h"
#include "hetrain/pool/spool.h"
#include "hetrain/pool/state.h"

namespace hetrain::pool {
namespace {

namespace fs = std::filesystem;

class Pool : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hetrain_pool_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    pool_.types = {{"fast", 2, 0.0}, {"slow", 1, 0.0}};
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
  sched::Pool pool_;
};

constexpr const char* kJob = R"([[job]]
name = "j"
speeds = { fast = 200, slow = 50 }
global_batch = 48
steps = 10

[run]
flags = ["--model", "mlp", "--metrics", "m.%g.json"]
checkpoint = "/shared/ck/j"
emulate = { slow = 0.25 }
)";

TEST_F(Pool, AJobFileIsAPlanJobWithWhatRunningItNeeds) {
  const SpoolJob s = load_spool_job(write("j.toml", kJob), pool_);
  EXPECT_EQ(s.job.name, "j");
  EXPECT_EQ(s.job.speed, (std::vector<double>{200, 50}));
  EXPECT_EQ(s.job.steps, 10u);
  EXPECT_EQ(s.flags, (std::vector<std::string>{"--model", "mlp", "--metrics", "m.%g.json"}));
  EXPECT_EQ(s.checkpoint, "/shared/ck/j");
  EXPECT_EQ(s.emulate.at("slow"), 0.25);
  EXPECT_EQ(spool_files(dir_.string()), (std::vector<std::string>{(dir_ / "j.toml").string()}));
}

TEST_F(Pool, BadJobFilesAreDataErrorsNamingTheKey) {
  const std::string job(kJob);
  const auto refused = [&](const std::string& text, const std::string& what) {
    try {
      load_spool_job(write("bad.toml", text), pool_);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(job.substr(0, job.find("[run]")), "[run]");
  refused(job + "\n[[job]]\nname = \"k\"\nspeeds = { fast = 1 }\nglobal_batch = 4\nsteps = 1\n",
          "exactly one");
  std::string policy = job;
  policy.replace(policy.find("\"--model\""), 9, "\"--policy\"");
  refused(policy, "--policy is set by hetrain pool");
  std::string emulate = job;
  emulate.replace(emulate.find("slow = 0.25"), 11, "gpu = 0.5");
  refused(emulate, "'gpu' is not a machine type");
  std::string speed = job;
  speed.replace(speed.find("slow = 0.25"), 11, "slow = 2");
  refused(speed, "(0, 1]");
}

TEST_F(Pool, TheSubmissionNamesTheGenerationAndTheTypesAsFeatures) {
  const SpoolJob s = load_spool_job(write("j.toml", kJob), pool_);
  const auto one = sbatch_args(s, pool_, {2, 0}, 3, "/logs");
  EXPECT_EQ(one,
            (std::vector<std::string>{"-N", "2", "--ntasks-per-node=1", "--exclusive", "--job-name=hp-j-3",
                                      "--output=/logs/j.3.out", "--constraint=fast"}));
  EXPECT_EQ(sbatch_args(s, pool_, {2, 1}, 1, "/logs").back(), "--constraint=[fast*2&slow*1]");
  const std::string script = job_script(s, pool_, "/bin/hetrain", 3);
  EXPECT_NE(script.find("'m.3.json'"), std::string::npos) << script;  // %g: the generation
  EXPECT_NE(script.find("share=(['fast']=200 ['slow']=50 )"), std::string::npos) << script;
  EXPECT_NE(script.find("emulate=(['fast']=1 ['slow']=0.25 )"), std::string::npos) << script;
  EXPECT_EQ(exit_file(s, 3), "/shared/ck/j/exit.3");
}

TEST_F(Pool, TheStateSurvivesARoundTripAndABadFileIsADataError) {
  PoolState s;
  s.clock_origin = 1e9;
  JobState& j = s.jobs["j"];
  j.status = Status::kStopping;
  j.generation = 2;
  j.slurm_id = "17";
  j.allocation = {1, 1};
  j.started = true;
  j.arrived = 3.5;
  const std::string path = (dir_ / "state.json").string();
  save_state(path, s);
  const PoolState back = load_state(path);
  EXPECT_EQ(back.clock_origin, 1e9);
  const JobState& b = back.jobs.at("j");
  EXPECT_EQ(b.status, Status::kStopping);
  EXPECT_EQ(b.generation, 2);
  EXPECT_EQ(b.slurm_id, "17");
  EXPECT_EQ(b.allocation, (sched::Allocation{1, 1}));
  EXPECT_TRUE(b.started);
  EXPECT_TRUE(load_state((dir_ / "none.json").string()).jobs.empty());
  EXPECT_THROW(load_state(write("bad.json", "{\"jobs\": 1}")), DataError);
}

// A stop the controller asked for can end a job in more ways than exit 6: a
// peer that left for it (4), a task killed before it listened or by the
// cancel past the deadline (srun: 128 + N). Those resume; errors that would
// only happen again fail, stopping or not.
TEST(AfterExit, WhatEndedAJobStoppingOrRunning) {
  for (const bool stopping : {false, true}) {
    EXPECT_EQ(after_exit(0, stopping), Status::kDone);
    EXPECT_EQ(after_exit(6, stopping), Status::kWaiting);
    EXPECT_EQ(after_exit(-1, stopping), Status::kWaiting);
    for (const int error : {1, 2, 3}) EXPECT_EQ(after_exit(error, stopping), Status::kFailed) << error;
  }
  for (const int by_stop : {4, 5, 128 + 15, 128 + 9}) {
    EXPECT_EQ(after_exit(by_stop, true), Status::kWaiting) << by_stop;
    EXPECT_EQ(after_exit(by_stop, false), Status::kFailed) << by_stop;
  }
}

TEST(Command, OutputExitCodeAndATimeoutThatKills) {
  const CommandResult r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10.0);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "out\nerr\n");
  EXPECT_THROW(run_command({"sleep", "5"}, 0.2), Error);
  EXPECT_THROW(run_command({"hetrain-no-such-program"}, 5.0), Error);
}

}  // namespace
}  // namespace hetrain::pool
