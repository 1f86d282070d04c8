// Bad input, end to end: every row of the table in docs/errors.md, run through
// the real binary. Each must give one line naming the problem and its exit
// code, before any training.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli_fixture.h"

namespace {

using hetrain::testing::Cli;
namespace fs = std::filesystem;

struct Case {
  const char* what;
  std::string args;
  int code;
  const char* says;  // a part of the message
};

void write_gz(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::vector<std::uint8_t> header(std::vector<std::uint32_t> fields) {
  std::vector<std::uint8_t> out;
  for (auto v : fields)
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<std::uint8_t>(v >> shift));
  return out;
}

std::vector<std::uint8_t> images(std::uint32_t magic, std::uint32_t n, std::uint32_t side, std::size_t cut = 0) {
  auto out = header({magic, n, side, side});
  out.resize(out.size() + n * side * side - cut, 0);
  return out;
}

std::vector<std::uint8_t> labels(std::vector<std::uint8_t> values) {
  auto out = header({0x801, static_cast<std::uint32_t>(values.size())});
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

TEST_F(Cli, EveryBadInputGivesOneLineAndItsExitCode) {
  const fs::path d = dir_;
  write_gz(d / "img.gz", images(0x803, 4, 28));
  write_gz(d / "lab.gz", labels({1, 2, 3, 4}));
  write_gz(d / "trunc.gz", images(0x803, 4, 28, 100));
  write_gz(d / "magic.gz", images(0x804, 4, 28));
  write_gz(d / "badlab.gz", labels({1, 2, 3, 42}));
  write_gz(d / "img20.gz", images(0x803, 4, 20));
  {
    std::ofstream corrupt(d / "corrupt.gz", std::ios::binary);
    corrupt << "\x1f\x8b\x08\x00garbage that is not deflate";
  }
  auto files = [&](const std::string& train_images, const std::string& train_labels = "lab.gz") {
    return " --model mlp --max-steps 2 --train-images " + (d / train_images).string() + " --train-labels " +
           (d / train_labels).string() + " --test-images " + (d / "img.gz").string() + " --test-labels " +
           (d / "lab.gz").string();
  };
  const std::string q = " --model mlp --data synthetic --synthetic-train 500 --synthetic-test 100 --max-steps 2";

  // A port held by someone else.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);

  const std::vector<Case> cases{
      {"missing data file", "run -n 2" + files("nope.gz"), 3, "cannot open"},
      {"truncated data file", "run -n 2" + files("trunc.gz"), 3, "truncated image data"},
      {"corrupt gzip stream", "run -n 2" + files("corrupt.gz"), 3, "corrupt.gz"},
      {"wrong magic", "run -n 2" + files("magic.gz"), 3, "wrong magic 0x00000804"},
      {"label out of range", "run -n 2" + files("img.gz", "badlab.gz"), 3, "label 42 at index 3 is out of range"},
      {"image size differs between train and test", "run -n 2" + files("img20.gz"), 3,
       "train images are 20x20 but test images are 28x28"},
      {"missing dataset directory", "run -n 2 --model mlp --data " + (d / "none").string(), 3,
       "dataset directory not found"},
      {"--speeds count", "run -n 4 --speeds 1,1,0.25" + q, 2, "--speeds has 3 values but there are 4 workers"},
      {"speed out of range", "run -n 2 --speeds 1,2" + q, 2, "--speeds values must be in (0, 1]"},
      {"B < N", "run -n 4 -b 3" + q, 2, "global batch 3 is smaller than the number of workers 4"},
      {"memory caps cannot hold B", "run -n 4 -b 64 --max-local-batch 10" + q, 2, "cannot hold the global batch"},
      {"minimums exceed B", "run -n 4 -b 64 --min-local-batch 20" + q, 2, "exceed the global batch 64"},
      {"--shares count", "run -n 2 --policy static --shares 1,2,3" + q, 2, "one value per worker"},
      {"unknown policy", "run -n 2 --policy fastest" + q, 2, "unknown policy 'fastest'"},
      {"unknown allreduce", "run -n 2 --allreduce tree" + q, 2, "unknown allreduce algorithm 'tree'"},
      {"negative learning rate", "run -n 2 --lr -1" + q, 2, "--lr must be >= 0"},
      {"malformed --slowdown", "run -n 2 --slowdown 2@x:1" + q, 2, "is not RANK@STEP:SPEED"},
      {"--slowdown rank out of range", "run -n 2 --slowdown 5@10:0.5" + q, 2, "names rank 5"},
      {"unknown flag", "run -n 2 --no-such-flag", 2, "--no-such-flag"},
      {"unwritable metrics file", "run -n 2 --metrics /proc/none/m.json" + q, 3, "cannot write /proc/none/m.json"},
      {"--checkpoint-every without --checkpoint", "run -n 2 --checkpoint-every 5" + q, 2, "needs --checkpoint"},
      {"bench size with an unknown unit", "bench allreduce -n 2 --sizes 1T", 2, "unknown unit"},
      {"negative bench size", "bench allreduce -n 2 --sizes=-1", 2, "is not a number of bytes"},
      {"bench size overflowing", "bench allreduce -n 2 --sizes 99999999999999G", 2, "is too large"},
      {"bench size beyond the machine's memory", "bench allreduce -n 2 --sizes 99999G", 2, "of memory"},
      {"bench size not whole floats", "bench allreduce -n 2 --sizes 6", 2, "multiple of 4 bytes"},
      {"bench --iters 0", "bench allreduce -n 2 --iters 0", 2, "--iters must be >= 1"},
      {"unknown bench algorithm", "bench allreduce -n 2 --algo tree", 2, "unknown allreduce algorithm 'tree'"},
      {"port already in use", "worker --master-port " + std::to_string(port) + q, 4, "already in use"},
  };
  for (const auto& c : cases) {
    const auto o = hetrain(c.args, c.code == 4 ? "RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1" : "");
    EXPECT_EQ(o.code, c.code) << c.what << ": " << o.err;
    EXPECT_EQ(lines(o.err), 1u) << c.what << ": " << o.err;
    EXPECT_EQ(o.err.rfind("hetrain: error: ", 0), 0u) << c.what << ": " << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << c.what << ": " << o.err;
  }
  // The same port as a store that never answers: a listener that accepts nothing (the kernel completes the
  // connection into the backlog) stands for a store server stalled by a request cut short. c10d's client
  // blocks in recv with no timeout; the rank must still fail with one line within --timeout plus the watch's
  // grace.
  const auto o = hetrain("worker --timeout 1 --master-port " + std::to_string(port) + q,
                         "RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1");
  EXPECT_EQ(o.code, 4) << o.err;
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_EQ(o.err.rfind("hetrain: error: rank 1: the store at 127.0.0.1:" + std::to_string(port) +
                            " did not answer within 1 s",
                        0),
            0u)
      << o.err;
  ::close(holder);
}

}  // namespace
