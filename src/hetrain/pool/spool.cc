#include "hetrain/pool/spool.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/sim/toml_fields.h"

namespace hetrain::pool {
namespace {

// Flags the controller owns: a job file giving one would fight it.
const std::set<std::string> kControllerFlags = {"--policy", "--shares", "--speeds", "--checkpoint",
                                                "--resume"};

std::vector<std::string> read_flags(const toml::table& run, const sim::Fields& f) {
  std::vector<std::string> flags;
  const toml::array* a = run.get_as<toml::array>("flags");
  if (a == nullptr) f.fail("flags", "missing: the job's hetrain training flags, as an array of strings");
  for (const auto& v : *a) {
    const auto s = v.value<std::string>();
    if (!s) f.fail("flags", "every flag must be a string");
    if (kControllerFlags.count(*s) != 0) f.fail("flags", fmt::format("{} is set by hetrain pool", *s));
    flags.push_back(*s);
  }
  return flags;
}

std::map<std::string, double> read_emulate(const toml::table& run, const sim::Fields& f,
                                           const sched::Pool& pool) {
  std::map<std::string, double> out;
  const toml::table* t = run.get_as<toml::table>("emulate");
  if (t == nullptr) return out;
  for (const auto& [key, value] : *t) {
    const std::string type(key.str());
    const auto speed = value.value<double>();
    const bool known =
        std::any_of(pool.types.begin(), pool.types.end(), [&](auto& m) { return m.name == type; });
    if (!known) f.fail("emulate", fmt::format("'{}' is not a machine type of the pool", type));
    if (!speed || *speed <= 0.0 || *speed > 1.0) f.fail("emulate", "speeds must be in (0, 1]");
    out[type] = *speed;
  }
  return out;
}

}  // namespace

SpoolJob load_spool_job(const std::string& path, const sched::Pool& pool) {
  toml::table doc = sim::load_toml(path);
  SpoolJob s;
  s.file = path;
  const toml::table* run = doc.get_as<toml::table>("run");
  const sim::Fields root(doc, path, "");
  if (run == nullptr) root.fail("run", "missing: [run] with flags and checkpoint");
  const auto f = *root.table("run");
  f.only({"flags", "checkpoint", "emulate"});
  s.flags = read_flags(*run, f);
  s.checkpoint = f.text("checkpoint", std::nullopt);
  s.emulate = read_emulate(*run, f, pool);
  doc.erase("run");
  std::ostringstream rest;
  rest << doc;
  auto jobs = sched::parse_jobs(rest.str(), path, pool);
  if (jobs.size() != 1) root.fail("job", "a spool file holds exactly one [[job]]");
  s.job = std::move(jobs[0]);
  return s;
}

std::vector<std::string> spool_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".toml") out.push_back(e.path().string());
  }
  if (ec) throw DataError(fmt::format("{}: cannot read the spool: {}", dir, ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hetrain::pool
