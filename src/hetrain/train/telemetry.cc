#include "hetrain/train/telemetry.h"

#include <algorithm>

#include "hetrain/common/error.h"

namespace hetrain::train {
namespace {
// Field offsets, in blocks of N floats.
constexpr std::size_t kCompute = 0;
constexpr std::size_t kLoss = 1;
constexpr std::size_t kPreviousStep = 2;
constexpr std::size_t kCpu = 3;
constexpr std::size_t kOffCpu = 4;
// Prime, and small enough that 4096 ranks' sum stays below 2^24.
constexpr std::size_t kFingerprintModulus = 4093;
}  // namespace

void Telemetry::write(std::span<float> block, std::size_t rank, const Mine& mine) const {
  HETRAIN_ENFORCE_EQ(block.size(), size());
  HETRAIN_ENFORCE_LT(rank, workers_);
  block[kCompute * workers_ + rank] = static_cast<float>(mine.compute_seconds);
  block[kLoss * workers_ + rank] = static_cast<float>(mine.scaled_loss);
  block[kPreviousStep * workers_ + rank] = static_cast<float>(mine.previous_step_seconds);
  block[kCpu * workers_ + rank] = static_cast<float>(mine.cpu_seconds);
  block[kOffCpu * workers_ + rank] = static_cast<float>(mine.off_cpu_seconds);
  block[kPerRankFields * workers_] = mine.fingerprint;
  block[kPerRankFields * workers_ + 1] = mine.stop ? 1.0f : 0.0f;
}

Telemetry::All Telemetry::read(std::span<const float> block) const {
  HETRAIN_ENFORCE_EQ(block.size(), size());
  All all;
  for (std::size_t i = 0; i < workers_; ++i) {
    all.compute_seconds.push_back(block[kCompute * workers_ + i]);
    all.cpu_seconds.push_back(block[kCpu * workers_ + i]);
    all.off_cpu_seconds.push_back(block[kOffCpu * workers_ + i]);
    all.loss += block[kLoss * workers_ + i];
    all.previous_step_seconds =
        std::max(all.previous_step_seconds, static_cast<double>(block[kPreviousStep * workers_ + i]));
  }
  all.fingerprint_sum = block[kPerRankFields * workers_];
  all.stop = block[kPerRankFields * workers_ + 1] > 0.0f;
  return all;
}

bool Telemetry::same_split(const All& all, float mine) const {
  return all.fingerprint_sum == mine * static_cast<float>(workers_);
}

float split_fingerprint(const std::vector<std::size_t>& split) {
  std::size_t f = 0;
  for (std::size_t i = 0; i < split.size(); ++i) f = (f + (i + 1) * split[i]) % kFingerprintModulus;
  return static_cast<float>(f);
}

}  // namespace hetrain::train
