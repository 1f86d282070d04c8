// The pool and job files: what they read, and the one-line DataError every
// malformed one gets (the bad-input table of docs/errors.md runs the same
// files through the binary, tests/sched/jobs_cli_test.py).
#include <gtest/gtest.h>

#include <string>

#include "hetrain/common/error.h"
#include "hetrain/sched/jobs.h"

namespace hetrain::sched {
namespace {

constexpr const char* kPool = R"([network]
bandwidth = 1e10
[[type]]
name = "gpu"
count = 2
price_per_hour = 3.0
[[type]]
name = "cpu"
count = 4
)";

constexpr const char* kJobs = R"([[model]]
name = "cnn"
speeds = { gpu = 100, cpu = 10 }
gradient_bytes = 4000
overhead = 0.01
[[job]]
name = "a"
model = "cnn"
global_batch = 64
steps = 100
[[job]]
name = "b"
speeds = { gpu = 50 }
global_batch = 32
steps = 10
arrival = 60
weight = 2
workers = 2
max_workers = 3
)";

std::string error_of(const std::string& pool, const std::string& jobs) {
  try {
    const Pool p = parse_pool(pool, "pool.toml");
    parse_jobs(jobs, "jobs.toml", p);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(JobsFile, ReadsPoolAndJobs) {
  const Pool pool = parse_pool(kPool, "pool.toml");
  ASSERT_EQ(pool.types.size(), 2u);
  EXPECT_EQ(pool.machines(), 6u);
  EXPECT_DOUBLE_EQ(pool.types[0].price_per_hour, 3.0);
  EXPECT_DOUBLE_EQ(pool.network.bandwidth, 1e10);
  const auto jobs = parse_jobs(kJobs, "jobs.toml", pool);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].speed, (std::vector<double>{100, 10}));
  EXPECT_DOUBLE_EQ(jobs[0].gradient_bytes, 4000);
  EXPECT_DOUBLE_EQ(jobs[0].overhead, 0.01);
  EXPECT_EQ(jobs[0].cap(), 64u);
  EXPECT_EQ(jobs[1].speed, (std::vector<double>{50, 0}));  // a type left out: cannot run there
  EXPECT_DOUBLE_EQ(jobs[1].arrival, 60);
  EXPECT_DOUBLE_EQ(jobs[1].weight, 2);
  EXPECT_EQ(jobs[1].workers, 2u);
  EXPECT_EQ(jobs[1].cap(), 3u);
}

TEST(JobsFile, EveryBadFileGetsOneLineNamingFileAndKey) {
  const std::string job_tail = "global_batch = 8\nsteps = 1\n";
  const struct {
    std::string pool, jobs, says;
  } cases[] = {
      {"[[type]]\nname = \"gpu\"\ncount = -2\n", "",
       "pool.toml:3:9: key 'type[0].count': expected an integer >= 0, got -2"},
      {"[[type]]\nname = \"gpu\"\n", "", "key 'type[0].count': missing (required)"},
      {"[[type]]\nname = \"gpu\"\ncount = 0\n", "", "the pool holds no machines"},
      {"", "", "key 'type': at least one [[type]] of machines is needed"},
      {"[[type]]\nname = \"gpu\"\ncount = 1\n[[type]]\nname = \"gpu\"\ncount = 1\n", "",
       "duplicate machine type name"},
      {"[[type]]\nname = \"gpu\"\ncount = 1\nprice = 2\n", "", "key 'type[0].price': unknown key"},
      {kPool, "[[job]]\nname = \"x\"\nspeeds = { gpu = 1 }\nsteps = 1\n",
       "jobs.toml:1:1: key 'job[0].global_batch': missing (required)"},
      {kPool, "[[job]]\nname = \"x\"\n" + job_tail, "key 'job[0].speeds': missing (required without model)"},
      {kPool, "[[job]]\nname = \"x\"\nspeeds = { tpu = 5 }\n" + job_tail,
       "key 'job[0].speeds.tpu': no machine type 'tpu' in the pool"},
      {kPool, "[[job]]\nname = \"x\"\nspeeds = { gpu = 0 }\n" + job_tail,
       "key 'job[0].speeds': job 'x' has a positive speed on no machine type the pool has machines of"},
      {kPool, "[[job]]\nname = \"x\"\nmodel = \"vit\"\n" + job_tail,
       "key 'job[0].model': no [[model]] named 'vit'"},
      {kPool, "[[job]]\nname = \"x\"\nspeeds = { gpu = -1 }\n" + job_tail,
       "expected a non-negative number, got -1"},
      {kPool, "[[job]]\nname = \"x\"\nspeeds = { gpu = 1 }\nglobal_batch = 8\nsteps = 0\n",
       "key 'job[0].steps': expected an integer >= 1, got 0"},
      {kPool, "", "key 'job': at least one [[job]] is needed"},
      {kPool,
       "[[job]]\nname = \"x\"\nspeeds = { gpu = 1 }\n" + job_tail +
           "[[job]]\nname = \"x\"\nspeeds = { gpu = 1 }\n" + job_tail,
       "duplicate job name"},
      {kPool, "[[job]]\nname = \"x\"\nspeeds = { gpu = 1 }\n" + job_tail + "weight = 0\n",
       "key 'job[0].weight': expected a positive number, got 0"},
      {kPool, "[[job]\n", "jobs.toml:1:"},
  };
  for (const auto& c : cases) {
    const std::string what = error_of(c.pool, c.jobs);
    EXPECT_NE(what.find(c.says), std::string::npos) << "got: " << what << "\nexpected: " << c.says;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(JobsFile, MissingFilesAreDataErrors) {
  EXPECT_THROW(load_pool("/nonexistent/pool.toml"), DataError);
  const Pool pool = parse_pool(kPool, "pool.toml");
  EXPECT_THROW(load_jobs("/nonexistent/jobs.toml", pool), DataError);
}

}  // namespace
}  // namespace hetrain::sched
