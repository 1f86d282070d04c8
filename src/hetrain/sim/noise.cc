#include "hetrain/sim/noise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "hetrain/common/error.h"

namespace hetrain::sim {
namespace {

constexpr double kUnitScale = 0x1.0p-53;  // 53 random bits to [0, 1)
constexpr int kUnitShift = 11;            // 64 - 53

// SplitMix64 (Steele, Lea and Flood 2014): the next output of the stream
// whose state is `state`. Also a hash: the streams of a world's workers are
// keyed by mixing the seed, the world and the rank (stream_key).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t stream_key(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a ^ splitmix64(b);
  return splitmix64(s);
}

std::vector<double> parse_row(const std::string& line, const std::string& where) {
  std::vector<double> row;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) {
    std::size_t used = 0;
    double v = 0.0;
    try {
      v = std::stod(cell, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const bool blank = cell.find_first_not_of(" \t\r", used) == std::string::npos;
    if (used == 0 || !blank || !std::isfinite(v) || v <= 0.0) {
      throw DataError(fmt::format("{}: '{}' is not a positive ratio", where, cell));
    }
    row.push_back(v);
  }
  return row;
}

}  // namespace

std::shared_ptr<const NoiseTrace> load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError(fmt::format("{}: cannot read the noise trace", path));
  auto trace = std::make_shared<NoiseTrace>();
  trace->path = path;
  std::string line;
  std::size_t line_no = 0, width = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (width == 0) {  // the header: one name per recorded worker
      width = static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
      trace->columns.assign(width, {});
      continue;
    }
    const std::vector<double> row = parse_row(line, fmt::format("{}:{}", path, line_no));
    if (row.size() != width) {
      throw DataError(fmt::format("{}:{}: {} ratios, the header names {} workers", path, line_no, row.size(),
                                  width));
    }
    for (std::size_t k = 0; k < width; ++k) trace->columns[k].push_back(row[k]);
  }
  if (width == 0 || trace->columns[0].size() < 2) {
    throw DataError(fmt::format("{}: a noise trace needs a header and at least 2 steps", path));
  }
  double sum = 0.0;
  for (const auto& column : trace->columns) sum += std::accumulate(column.begin(), column.end(), 0.0);
  trace->mean = sum / static_cast<double>(width * trace->columns[0].size());
  return trace;
}

std::string resolve_beside(const std::string& path, const std::string& beside) {
  if (path.empty() || path[0] == '/') return path;
  const std::size_t slash = beside.rfind('/');
  return slash == std::string::npos ? path : beside.substr(0, slash + 1) + path;
}

double mean_multiplier(const WorkerGroup& g) {
  const NoiseModel& m = g.noise_model;
  double mean = 1.0;
  if (m.kind == NoiseKind::kLognormal) mean = std::exp(0.5 * g.noise * g.noise);
  if (m.kind == NoiseKind::kTrace) mean = m.trace->mean;
  // A normal multiplier is clamped at 0, which moves its mean by less than
  // 1e-6 for sigma up to 0.2: taken as 1.
  return mean * (1.0 + m.spike_chance * (0.5 * (m.spike_min + m.spike_max) - 1.0));
}

NoiseStreams::NoiseStreams(std::uint64_t seed) : seed_(seed) {
  network_.rng = stream_key(seed_, ~std::uint64_t{0});  // no world's number: the network outlives them
}

void NoiseStreams::reset(std::size_t workers) {
  state_.assign(workers, State{});
  for (std::size_t r = 0; r < workers; ++r) state_[r].rng = stream_key(stream_key(seed_, worlds_), r);
  ++worlds_;
}

double NoiseStreams::unit(State& s) { return static_cast<double>(splitmix64(s.rng) >> kUnitShift) * kUnitScale; }

double NoiseStreams::normal(State& s) {
  const double u = 1.0 - unit(s);  // (0, 1]: the log is finite
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * unit(s));
}

double NoiseStreams::correlated(State& s, double correlation) {
  const double z = normal(s);
  s.x = s.started ? correlation * s.x + std::sqrt(1.0 - correlation * correlation) * z : z;
  s.started = true;
  return s.x;
}

double NoiseStreams::replay(State& s, const NoiseModel& m) {
  const auto& columns = m.trace->columns;
  const std::size_t steps = columns[0].size();
  if (s.left == 0) {  // a new block from a random place
    s.column = std::min(columns.size() - 1, static_cast<std::size_t>(unit(s) * static_cast<double>(columns.size())));
    s.position = std::min(steps - 1, static_cast<std::size_t>(unit(s) * static_cast<double>(steps)));
    s.left = m.block;
  }
  --s.left;
  const double v = columns[s.column][s.position];
  s.position = (s.position + 1) % steps;  // circular: every recorded step is replayed as often
  return v;
}

double NoiseStreams::draw(std::size_t rank, const WorkerGroup& g) {
  const NoiseModel& m = g.noise_model;
  State& s = state_[rank];
  double multiplier = 1.0;
  if (m.kind == NoiseKind::kTrace) {
    multiplier = replay(s, m);
  } else if (g.noise > 0.0) {
    const double x = correlated(s, m.correlation);
    multiplier = m.kind == NoiseKind::kLognormal ? std::exp(g.noise * x) : std::max(0.0, 1.0 + g.noise * x);
  }
  if (m.spike_chance > 0.0 && unit(s) < m.spike_chance) multiplier *= m.spike_min + (m.spike_max - m.spike_min) * unit(s);
  return multiplier;
}

double NoiseStreams::independent_normal(double sigma) {
  return sigma > 0.0 ? std::max(0.0, 1.0 + sigma * normal(network_)) : 1.0;
}

}  // namespace hetrain::sim
