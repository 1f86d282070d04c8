#include <gtest/gtest.h>

#include <map>

#include "hetrain/comm/env.h"
#include "hetrain/common/error.h"

namespace hetrain::comm {
namespace {

EnvLookup fake(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(WorldFromEnv, NoLauncherIsAWorldOfOne) {
  const auto w = world_from_env(fake({}));
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.world_size, 1);
  EXPECT_EQ(w.source, "none");
  EXPECT_EQ(w.master_port, kDefaultMasterPort);
}

TEST(WorldFromEnv, ReadsTorchrunVariables) {
  const auto w = world_from_env(fake({{"RANK", "2"},
                                      {"WORLD_SIZE", "4"},
                                      {"LOCAL_RANK", "0"},
                                      {"LOCAL_WORLD_SIZE", "2"},
                                      {"MASTER_ADDR", "10.1.2.3"},
                                      {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(w.source, "torchrun");
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.world_size, 4);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.master_addr, "10.1.2.3");
  EXPECT_EQ(w.master_port, 1234);
}

TEST(WorldFromEnv, ReadsOpenMpiAndSlurmVariables) {
  const auto m = world_from_env(fake(
      {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  EXPECT_EQ(m.source, "mpi");
  EXPECT_EQ(m.rank, 3);
  EXPECT_EQ(m.world_size, 8);
  EXPECT_EQ(m.local_world_size, 4);
  const auto s = world_from_env(fake({{"SLURM_PROCID", "1"},
                                      {"SLURM_NTASKS", "2"},
                                      {"SLURM_NTASKS_PER_NODE", "2(x1)"},
                                      {"MASTER_ADDR", "node0"}}));
  EXPECT_EQ(s.source, "slurm");
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.local_world_size, 1);  // "2(x1)" is not a plain number
}

TEST(WorldFromEnv, MalformedValuesAreUsageErrors) {
  EXPECT_THROW(world_from_env(fake({{"RANK", "4"}, {"WORLD_SIZE", "4"}})), UsageError);
  EXPECT_THROW(world_from_env(fake({{"RANK", "x"}, {"WORLD_SIZE", "4"}})), UsageError);
  EXPECT_THROW(world_from_env(fake({{"RANK", "0"}})), UsageError);
  EXPECT_THROW(world_from_env(fake({{"MASTER_PORT", "70000"}})), UsageError);
  EXPECT_THROW(world_from_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}})), UsageError);
}

}  // namespace
}  // namespace hetrain::comm
