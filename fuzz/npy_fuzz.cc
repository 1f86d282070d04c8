// libFuzzer target: the .npy reader (data/npy.h) on arbitrary bytes.
// Input: 2 bytes (little-endian) giving the length L of the inputs file, then
// L bytes of inputs file, then the targets file. The header parser sees the
// first file's bytes directly; then both are opened as a training table
// (memory-mapped, checked, labels scanned) and every row read. Any input
// must either load or raise hetrain::Error; a crash, a leak, an
// out-of-bounds read or any other exception is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hetrain/common/error.h"
#include "hetrain/data/npy.h"

namespace {

std::string write_temp(const std::uint8_t* data, std::size_t size, const char* what) {
  std::string path = "/tmp/hetrain_fuzz_" + std::to_string(::getpid()) + "_" + what + ".npy";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// Reads every row: what loaded must be readable within its mapping.
void read_all(const hetrain::data::NpyArray& a) {
  std::vector<std::uint8_t> row(a.row_bytes());
  for (std::size_t i = 0; i < a.rows(); ++i) a.copy_rows(i, 1, row.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t x_len = std::min<std::size_t>(size - 2, data[0] | (std::size_t{data[1]} << 8));
  try {
    (void)hetrain::data::parse_npy_header(std::span(data + 2, x_len), "x.npy");
  } catch (const hetrain::Error&) {
  }
  const std::string x = write_temp(data + 2, x_len, "x");
  const std::string y = write_temp(data + 2 + x_len, size - 2 - x_len, "y");
  try {
    const auto table = hetrain::data::open_npy(x, y);
    if (table.train.x.rows() != table.train.y.rows()) std::abort();
    if (table.class_labels && (table.num_classes == 0 || table.num_classes > hetrain::data::kMaxNpyClasses))
      std::abort();
    read_all(table.train.x);
    read_all(table.train.y);
  } catch (const hetrain::Error&) {
  }
  std::remove(x.c_str());
  std::remove(y.c_str());
  return 0;
}
