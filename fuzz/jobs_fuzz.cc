// libFuzzer target: the pool and job files of `hetrain plan --jobs` and
// `hetrain sim --jobs` (toml++ underneath, hetrain's field checks on top).
// Each input is read as a pool and as a job list over a fixed pool; either
// must parse or raise hetrain::Error naming the file; anything else is a
// finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "hetrain/common/error.h"
#include "hetrain/sched/jobs.h"

namespace {

constexpr const char* kPool = R"([[type]]
name = "gpu"
count = 2
[[type]]
name = "cpu"
count = 4
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    hetrain::sched::parse_pool(text, "pool.toml");
  } catch (const hetrain::Error&) {
  }
  static const hetrain::sched::Pool pool = hetrain::sched::parse_pool(kPool, "fixed.toml");
  try {
    hetrain::sched::parse_jobs(text, "jobs.toml", pool);
  } catch (const hetrain::Error&) {
  }
  return 0;
}
