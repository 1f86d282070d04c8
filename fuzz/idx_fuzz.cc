// libFuzzer target: the idx reader (gzip or plain) on arbitrary bytes.
// Input: 2 bytes (little-endian) giving the length L of the images file, then
// L bytes of images file, then the labels file. Any input must either load
// or raise hetrain::Error; a crash, a leak, an out-of-bounds read or any
// other exception is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hetrain/common/error.h"
#include "hetrain/data/idx.h"

namespace {

std::string write_temp(const std::uint8_t* data, std::size_t size, const char* what) {
  std::string path = "/tmp/hetrain_fuzz_" + std::to_string(::getpid()) + "_" + what;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t images_len = std::min<std::size_t>(size - 2, data[0] | (std::size_t{data[1]} << 8));
  const std::string images = write_temp(data + 2, images_len, "images");
  const std::string labels = write_temp(data + 2 + images_len, size - 2 - images_len, "labels");
  try {
    const auto set = hetrain::data::read_idx_pair(images, labels);
    // What loads must be consistent.
    if (set.pixels.size() != set.size() * set.rows * set.cols) std::abort();
    for (auto l : set.labels)
      if (l >= set.num_classes) std::abort();
  } catch (const hetrain::Error&) {
  }
  std::remove(images.c_str());
  std::remove(labels.c_str());
  return 0;
}
