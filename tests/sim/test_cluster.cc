#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "hetrain/common/error.h"
#include "hetrain/sim/cluster.h"

namespace hetrain::sim {
namespace {

constexpr const char* kGood = R"(global_batch = 60
gradient_bytes = 3000
[network]
bandwidth = 1e6
latency = 0.001
[[group]]
name = "a"
speed = 100
overhead = 0.01
[[group]]
name = "b"
count = 2
sample_cost = 0.005
max_local_batch = 40
[[event]]
step = 4
kind = "speed"
group = "b"
speed = 50
[[event]]
step = 2
kind = "join"
group = "a"
count = 3
)";

// The DataError's message for `text` read as file "c.toml".
std::string error_of(const std::string& text) {
  try {
    parse_cluster(text, "c.toml");
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Cluster, ReadsGroupsNetworkAndEventsInStepOrder) {
  const Cluster c = parse_cluster(kGood, "c.toml");
  EXPECT_EQ(c.global_batch, 60u);
  EXPECT_EQ(c.gradient_bytes, 3000.0);
  EXPECT_EQ(c.network.bandwidth, 1e6);
  EXPECT_EQ(c.network.latency, 0.001);
  EXPECT_EQ(c.network.intra_latency, 0.001);  // defaults to the inter-node link
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].count, 1u);
  EXPECT_EQ(c.groups[1].count, 2u);
  EXPECT_DOUBLE_EQ(c.groups[1].speed, 200.0);  // 1 / sample_cost
  EXPECT_EQ(c.groups[1].max_local_batch, 40u);
  EXPECT_EQ(c.workers(), 3u);
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].step, 2u);
  EXPECT_EQ(c.events[0].kind, EventKind::kJoin);
  EXPECT_EQ(c.events[0].group, 0u);
  EXPECT_EQ(c.events[0].count, 3u);
  EXPECT_EQ(c.events[1].kind, EventKind::kSpeed);
  EXPECT_EQ(c.events[1].speed, 50.0);
}

// A device group reports its name as its kind (as a GPU reports its model)
// unless `kind` names it ("": none); a group on a machine reports none unless told.
TEST(Cluster, AGroupsKindIsItsOwnItsNameOffAnyMachineElseNone) {
  const Cluster c = parse_cluster(kGood, "c.toml");
  EXPECT_EQ(reported_kind(c.groups[0]), "a");
  const Cluster same = parse_cluster(std::string(kGood) + "[[group]]\nname = \"c\"\nspeed = 100\nkind = \"a\"\n"
                                     "[[machine]]\nname = \"m\"\ncores = 2\n[[group]]\nname = \"d\"\nspeed = 1\n"
                                     "machine = \"m\"\n[[group]]\nname = \"e\"\nspeed = 1\nkind = \"\"\n",
                                     "c.toml");
  EXPECT_EQ(reported_kind(same.groups[2]), "a");
  EXPECT_EQ(reported_kind(same.groups[3]), "");
  EXPECT_EQ(reported_kind(same.groups[4]), "");  // a device that says none
}

TEST(Cluster, AWrongValueNamesFileLineAndKey) {
  std::string text = kGood;
  text.replace(text.find("speed = 100"), 11, "speed = \"fast\"");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("c.toml:8:"), std::string::npos) << e;
  EXPECT_NE(e.find("group[0].speed"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a number"), std::string::npos) << e;
}

TEST(Cluster, ANegativeValueNamesFileLineAndKey) {
  std::string text = kGood;
  text.replace(text.find("latency = 0.001"), 15, "latency = -1");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("c.toml:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("network.latency"), std::string::npos) << e;
}

TEST(Cluster, AnUnknownKeyOrGroupIsNamed) {
  std::string typo = kGood;
  typo.replace(typo.find("overhead = 0.01"), 15, "overhed = 0.01");
  const std::string e1 = error_of(typo);
  EXPECT_NE(e1.find("c.toml:9:"), std::string::npos) << e1;
  EXPECT_NE(e1.find("group[0].overhed': unknown key"), std::string::npos) << e1;

  std::string bad_group = kGood;
  bad_group.replace(bad_group.find("group = \"a\""), 11, "group = \"z\"");
  const std::string e2 = error_of(bad_group);
  EXPECT_NE(e2.find("c.toml:23:"), std::string::npos) << e2;
  EXPECT_NE(e2.find("event[1].group"), std::string::npos) << e2;
  EXPECT_NE(e2.find("no worker group named 'z'"), std::string::npos) << e2;
}

TEST(Cluster, SyntaxErrorsAndMissingKeysNameTheFile) {
  const std::string e1 = error_of("global_batch = = 3\n");
  EXPECT_EQ(e1.rfind("c.toml:1:", 0), 0u) << e1;
  const std::string e2 = error_of("gradient_bytes = 1\n[[group]]\nname = \"a\"\nspeed = 1\n");
  EXPECT_NE(e2.find("key 'global_batch': missing"), std::string::npos) << e2;
  const std::string e3 = error_of("global_batch = 8\ngradient_bytes = 1\n[[group]]\nname = \"a\"\n");
  EXPECT_NE(e3.find("c.toml:3:"), std::string::npos) << e3;
  EXPECT_NE(e3.find("group[0].speed"), std::string::npos) << e3;
}

// Two machines: four workers sharing "box"'s 2 cores, one of them held to a
// quarter of a CPU, and an independent device.
constexpr const char* kShared = R"(global_batch = 64
gradient_bytes = 4000
[network]
noise = 0.02
[[machine]]
name = "box"
cores = 2
[[group]]
name = "host"
count = 3
machine = "box"
speed = 100
[[group]]
name = "held"
machine = "box"
speed = 100
quota = 0.25
[[group]]
name = "gpu"
speed = 800
)";

TEST(Cluster, ReadsMachinesQuotasAndTheirStandaloneSpeeds) {
  const Cluster c = parse_cluster(kShared, "c.toml");
  ASSERT_EQ(c.machines.size(), 1u);
  EXPECT_EQ(c.machines[0].name, "box");
  EXPECT_EQ(c.machines[0].cores, 2.0);
  EXPECT_EQ(c.network.noise, 0.02);
  EXPECT_EQ(c.groups[0].machine, 0u);
  EXPECT_EQ(c.groups[0].threads, 1.0);
  EXPECT_EQ(c.groups[0].quota, 0.0);
  EXPECT_EQ(c.groups[1].quota, 0.25);
  EXPECT_EQ(c.groups[2].machine, kNoMachine);
  // Alone on the box a worker gets one CPU (its thread), the held one its quota.
  EXPECT_DOUBLE_EQ(standalone_speed(c, c.groups[0]), 100.0);
  EXPECT_DOUBLE_EQ(standalone_speed(c, c.groups[1]), 25.0);
  EXPECT_DOUBLE_EQ(standalone_speed(c, c.groups[2]), 800.0);
  Cluster wide = c;
  wide.groups[0].threads = 4;  // more threads than the box has cores
  EXPECT_DOUBLE_EQ(standalone_cpus(wide, wide.groups[0]), 2.0);
}

TEST(Cluster, MachineMistakesAreNamed) {
  std::string unknown = kShared;
  unknown.replace(unknown.find("machine = \"box\""), 15, "machine = \"bx\"");
  const std::string e1 = error_of(unknown);
  EXPECT_NE(e1.find("group[0].machine"), std::string::npos) << e1;
  EXPECT_NE(e1.find("no [[machine]] named 'bx'"), std::string::npos) << e1;

  std::string stray = kShared;
  stray.replace(stray.find("speed = 800"), 11, "speed = 800\nquota = 0.5");
  const std::string e2 = error_of(stray);
  EXPECT_NE(e2.find("group[2].quota"), std::string::npos) << e2;
  EXPECT_NE(e2.find("only workers on a machine"), std::string::npos) << e2;

  std::string zero = kShared;
  zero.replace(zero.find("quota = 0.25"), 12, "quota = 0");
  EXPECT_NE(error_of(zero).find("group[1].quota"), std::string::npos);

  std::string twice = kShared;
  twice.replace(twice.find("[[group]]"), 9, "[[machine]]\nname = \"box\"\ncores = 1\n[[group]]");
  EXPECT_NE(error_of(twice).find("duplicate machine name"), std::string::npos);
}

TEST(Cluster, AMissingFileIsADataError) {
  EXPECT_THROW(load_cluster("/nonexistent/cluster.toml"), DataError);
}

TEST(Cluster, LoadsFromAFileAndNamesItsPath) {
  const std::string path = ::testing::TempDir() + "hetrain_sim_cluster.toml";
  {
    std::ofstream out(path);
    out << "global_batch = 8\ngradient_bytes = 4\n[[group]]\nname = \"a\"\nspeed = 0\n";
  }
  try {
    load_cluster(path);
    FAIL() << "a zero speed was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":5:"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hetrain::sim
