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

// `hetrain run` sets torchrun's variables and names itself, so the banner
// does not say "torchrun" for a run torchrun never saw.
TEST(WorldFromEnv, NamesTheLauncherThatSetTheVariables) {
  const std::map<std::string, std::string> torchrun{{"RANK", "0"}, {"WORLD_SIZE", "4"}};
  EXPECT_EQ(world_from_env(fake(torchrun)).launcher, "torchrun");
  auto run = torchrun;
  run.emplace(kLauncherVariable, kRunLauncher);
  const auto w = world_from_env(fake(run));
  EXPECT_EQ(w.launcher, "hetrain run");
  EXPECT_EQ(w.source, "torchrun");  // still read as torchrun's variables
  EXPECT_EQ(world_from_env(fake({})).launcher, "none");
  EXPECT_EQ(world_from_env(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})).launcher, "slurm");
}

TEST(WorldFromEnv, ReadsOpenMpiAndSlurmVariables) {
  const auto m = world_from_env(fake({{"OMPI_COMM_WORLD_RANK", "3"},
                                      {"OMPI_COMM_WORLD_SIZE", "8"},
                                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                      {"MASTER_ADDR", "node0"}}));  // two hosts: it must be given
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


TEST(WorldFromEnv, TorchrunAgentStoreAndRestartCount) {
  const auto w = world_from_env(fake({{"RANK", "1"},
                                      {"WORLD_SIZE", "3"},
                                      {"MASTER_ADDR", "127.0.0.1"},
                                      {"MASTER_PORT", "29501"},
                                      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                      {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  EXPECT_TRUE(w.agent_store);
  EXPECT_EQ(w.restart_count, 2);
  const auto c10d = world_from_env(
      fake({{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"}}));
  EXPECT_FALSE(c10d.agent_store);  // --rdzv_backend c10d: rank 0 serves
  EXPECT_EQ(c10d.restart_count, 0);
  EXPECT_THROW(world_from_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_RESTART_COUNT", "x"}})),
               UsageError);
}

TEST(WorldFromEnv, MpirunOnOneHostNeedsNoMaster) {
  const auto env = [](const std::string& job) {
    return fake({{"OMPI_COMM_WORLD_RANK", "0"},
                 {"OMPI_COMM_WORLD_SIZE", "3"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                 {"OMPI_MCA_ess_base_jobid", job}});
  };
  const auto a = world_from_env(env("2816933889")), b = world_from_env(env("2816933890"));
  EXPECT_EQ(a.master_addr, "127.0.0.1");
  EXPECT_GE(a.master_port, kDerivedPortBase);
  EXPECT_LT(a.master_port, kDerivedPortBase + kDerivedPortSpan);
  EXPECT_EQ(a.master_port, world_from_env(env("2816933889")).master_port);  // every rank agrees
  EXPECT_NE(a.master_port, b.master_port);                                  // another job, another port
}

TEST(WorldFromEnv, MpirunAcrossHostsNamesWhatToSet) {
  const auto across = fake(
      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  try {
    world_from_env(across);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos) << e.what();
  }
  const auto given = fake({{"OMPI_COMM_WORLD_RANK", "0"},
                           {"OMPI_COMM_WORLD_SIZE", "4"},
                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                           {"MASTER_ADDR", "node0"},
                           {"MASTER_PORT", "29400"}});
  EXPECT_EQ(world_from_env(given).master_addr, "node0");
  EXPECT_EQ(world_from_env(given).master_port, 29400);
}

TEST(WorldFromEnv, SlurmMasterFromNodeListAndJobId) {
  const auto w = world_from_env(fake({{"SLURM_PROCID", "2"},
                                      {"SLURM_NTASKS", "6"},
                                      {"SLURM_JOB_NODELIST", "gpu[07-09],cpu1"},
                                      {"SLURM_JOB_ID", "4242"},
                                      {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(w.master_addr, "gpu07");
  EXPECT_GE(w.master_port, kDerivedPortBase);
  EXPECT_LT(w.master_port, kDerivedPortBase + kDerivedPortSpan);
  const auto set = world_from_env(fake({{"SLURM_PROCID", "0"},
                                        {"SLURM_NTASKS", "2"},
                                        {"SLURM_JOB_NODELIST", "n1"},
                                        {"SLURM_JOB_ID", "1"},
                                        {"MASTER_ADDR", "10.0.0.5"},
                                        {"MASTER_PORT", "29444"}}));
  EXPECT_EQ(set.master_addr, "10.0.0.5");  // the user's choice wins
  EXPECT_EQ(set.master_port, 29444);
}

TEST(FirstSlurmHost, TheFormsSlurmWrites) {
  EXPECT_EQ(first_slurm_host("vm"), "vm");
  EXPECT_EQ(first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(first_slurm_host("node[1-4]"), "node1");
  EXPECT_EQ(first_slurm_host("node[01-04,07]"), "node01");
  EXPECT_EQ(first_slurm_host("node[3,5-6]"), "node3");
  EXPECT_EQ(first_slurm_host("rack[2-3]-gpu,cpu1"), "rack2-gpu");
  EXPECT_EQ(first_slurm_host("cpu1,gpu[1-2]"), "cpu1");
  EXPECT_THROW(first_slurm_host(""), UsageError);
  EXPECT_THROW(first_slurm_host("node["), UsageError);
  EXPECT_THROW(first_slurm_host("[1-2]"), UsageError);
  EXPECT_THROW(first_slurm_host("node[a-b]"), UsageError);
}

}  // namespace
}  // namespace hetrain::comm
