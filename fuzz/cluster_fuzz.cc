// libFuzzer target: the TOML cluster and inventory files of `hetrain sim` and
// `hetrain plan` (toml++ underneath, hetrain's field checks on top). Any input
// must either parse or raise hetrain::Error naming the file; anything else is
// a finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "hetrain/common/error.h"
#include "hetrain/sim/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    hetrain::sim::parse_cluster(text, "fuzz.toml");
  } catch (const hetrain::Error&) {
  }
  return 0;
}
