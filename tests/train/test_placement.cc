// Placement (train/placement.h): hosts from the gathered workers, and the
// cgroup CPU quota read from files laid out as the kernel lays them out.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hetrain/alloc/policy.h"
#include "hetrain/common/error.h"
#include "hetrain/train/placement.h"

namespace hetrain::train {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Placement, WorkersWithOneHostIdShareOneHost) {
  const std::vector<WorkerPlace> w{{7.0, 1.0, 2.0}, {9.0, 2.0, 8.0}, {7.0, 0.25, 2.0}};
  const alloc::Placement p = placement_of(w);
  EXPECT_EQ(p.host, (std::vector<std::size_t>{0, 1, 0}));
  EXPECT_EQ(p.cpus, (std::vector<double>{1.0, 2.0, 0.25}));
  EXPECT_EQ(p.host_cores, (std::vector<double>{2.0, 8.0}));
  EXPECT_TRUE(p.shared());
  EXPECT_NO_THROW(p.check(3));
}

TEST(Placement, WorkersSayingOneKindAreOneKindAndUnsaidIsNone) {
  const std::vector<WorkerPlace> w{{7.0, 1.0, 2.0, kind_id("a100")},
                                   {9.0, 1.0, 2.0, kind_id("v100")},
                                   {7.0, 1.0, 2.0, kind_id("a100")},
                                   {7.0, 1.0, 2.0, kind_id("")}};
  const alloc::Placement p = placement_of(w);
  EXPECT_EQ(p.kind, (std::vector<std::size_t>{1, 2, 1, 0}));
  EXPECT_NO_THROW(p.check(4));
  EXPECT_THROW(p.check(3), UsageError);
  EXPECT_EQ(this_worker(1, "a100").kind_id, kind_id("a100"));
  EXPECT_EQ(this_worker(1).kind_id, 0.0);
}

TEST(Placement, ThisWorkerCanUseAtMostItsThreadsAndItsHostsCpus) {
  const WorkerPlace one = this_worker(1);
  EXPECT_GT(one.cpus, 0.0);
  EXPECT_LE(one.cpus, 1.0);
  EXPECT_GE(one.host_cores, 1.0);
  EXPECT_EQ(one.host_id, this_worker(4).host_id);
  EXPECT_LE(this_worker(1000).cpus, one.host_cores);
}

class CgroupQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("hetrain_cgroup_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(CgroupQuota, V1QuotaOverPeriod) {
  write(root_ / "cpu/job/cpu.cfs_quota_us", "25000\n");
  write(root_ / "cpu/job/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("2:cpuacct:/\n1:cpu:/job\n0::/\n", root_.string()), 0.25);
}

TEST_F(CgroupQuota, V1WithoutAQuotaIsNone) {
  write(root_ / "cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  write(root_ / "cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("3:cpu,cpuacct:/job\n", root_.string()), 0.0);
}

TEST_F(CgroupQuota, V2CpuMax) {
  write(root_ / "job/cpu.max", "150000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/job\n", root_.string()), 1.5);
  write(root_ / "job/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/job\n", root_.string()), 0.0);
}

TEST_F(CgroupQuota, AParentsQuotaBindsAChildWithoutOne) {
  write(root_ / "cpu/job/cpu.cfs_quota_us", "25000\n");
  write(root_ / "cpu/job/cpu.cfs_period_us", "100000\n");
  write(root_ / "cpu/job/rank1/cpu.cfs_quota_us", "-1\n");
  write(root_ / "cpu/job/rank1/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("1:cpu:/job/rank1\n", root_.string()), 0.25);
  write(root_ / "job/cpu.max", "200000 100000\n");
  write(root_ / "job/rank1/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/job/rank1\n", root_.string()), 2.0);
}

TEST_F(CgroupQuota, TheTightestLevelWins) {
  write(root_ / "slice/cpu.max", "50000 100000\n");
  write(root_ / "slice/job/cpu.max", "150000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/slice/job\n", root_.string()), 0.5);
  write(root_ / "slice/job/cpu.max", "20000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/slice/job\n", root_.string()), 0.2);
}

TEST_F(CgroupQuota, MissingOrMalformedFilesAreNone) {
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("1:cpu:/nowhere\n0::/nowhere\n", root_.string()), 0.0);
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("garbage", root_.string()), 0.0);
  write(root_ / "job/cpu.max", "lots of cpu\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/job\n", root_.string()), 0.0);
}

}  // namespace
}  // namespace hetrain::train
