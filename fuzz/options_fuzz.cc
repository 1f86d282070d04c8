// libFuzzer target: the text parsers of the command line (--slowdown,
// --allreduce) and the option validation. Any input must either parse or
// raise hetrain::Error; anything else is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "hetrain/comm/allreduce.h"
#include "hetrain/common/error.h"
#include "hetrain/train/options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    hetrain::train::TrainOptions o;
    o.data = "synthetic";
    o.slowdowns = hetrain::train::parse_slowdowns(text);
    for (const auto& c : o.slowdowns)
      if (!(c.speed == c.speed)) std::abort();  // a NaN speed must not parse
    hetrain::train::validate(o, 4);
  } catch (const hetrain::Error&) {
  }
  try {
    hetrain::comm::parse_algorithm(text);
  } catch (const hetrain::Error&) {
  }
  return 0;
}
