#include "hetrain/sched/jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "hetrain/common/error.h"
#include "hetrain/sim/toml_fields.h"

namespace hetrain::sched {
namespace {

using sim::Fields;

// What a [[model]] gives the jobs that name it.
struct ModelEntry {
  std::string name;
  std::vector<double> speed;
  double overhead = 0.0;
  double gradient_bytes = 0.0;
  double step_overhead = 0.0;
};

template <typename T>
void refuse_duplicate(const std::vector<T>& seen, const Fields& f, const char* what) {
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
    if (seen[i].name == seen.back().name) f.fail("name", fmt::format("duplicate {} name", what));
  }
}

// `speeds = { a100 = 1200, cpu = 20 }`: samples/s per pool type; a type left
// out is one the job cannot run on.
std::vector<double> read_speeds(const Fields& owner, const toml::table& raw, const Pool& pool) {
  const std::optional<Fields> f = owner.table("speeds");
  if (!f) owner.fail("speeds", "missing (required without model)");
  std::vector<double> speed(pool.types.size(), 0.0);
  for (const auto& entry : *raw.get("speeds")->as_table()) {
    const std::string_view name = entry.first.str();
    const auto it = std::find_if(pool.types.begin(), pool.types.end(),
                                 [name](const MachineType& t) { return t.name == name; });
    if (it == pool.types.end()) f->fail(name, fmt::format("no machine type '{}' in the pool", name));
    speed[static_cast<std::size_t>(it - pool.types.begin())] = f->number(name, std::nullopt, true);
  }
  return speed;
}

ModelEntry read_model(const Fields& f, const toml::table& raw, const Pool& pool) {
  f.only({"name", "speeds", "overhead", "gradient_bytes", "step_overhead"});
  ModelEntry m;
  m.name = f.text("name", std::nullopt);
  m.speed = read_speeds(f, raw, pool);
  m.overhead = f.number("overhead", 0.0, true);
  m.gradient_bytes = f.number("gradient_bytes", 0.0, true);
  m.step_overhead = f.number("step_overhead", 0.0, true);
  return m;
}

// The job's cost model: its model's, each key given in the job overriding it.
void read_cost_model(const Fields& f, const toml::table& raw, const Pool& pool,
                     const std::vector<ModelEntry>& models, Job& j) {
  ModelEntry base;
  if (f.has("model")) {
    const std::string name = f.text("model", std::nullopt);
    const auto it =
        std::find_if(models.begin(), models.end(), [&name](const ModelEntry& m) { return m.name == name; });
    if (it == models.end()) f.fail("model", fmt::format("no [[model]] named '{}'", name));
    base = *it;
  }
  j.speed = f.has("speeds") || !f.has("model") ? read_speeds(f, raw, pool) : base.speed;
  j.overhead = f.number("overhead", base.overhead, true);
  j.gradient_bytes = f.number("gradient_bytes", base.gradient_bytes, true);
  j.step_overhead = f.number("step_overhead", base.step_overhead, true);
}

Job read_job(const Fields& f, const toml::table& raw, const Pool& pool,
             const std::vector<ModelEntry>& models) {
  f.only({"name", "model", "speeds", "overhead", "gradient_bytes", "step_overhead", "global_batch", "steps",
          "arrival", "weight", "workers", "max_workers"});
  Job j;
  j.name = f.text("name", std::nullopt);
  read_cost_model(f, raw, pool, models, j);
  j.global_batch = f.count("global_batch", std::nullopt, 1);
  j.steps = f.count("steps", std::nullopt, 1);
  j.arrival = f.number("arrival", 0.0, true);
  j.weight = f.number("weight", 1.0);
  j.workers = f.count("workers", 1, 1);
  j.max_workers = f.count("max_workers", 0);
  bool runnable = false;
  for (std::size_t t = 0; t < pool.types.size(); ++t)
    runnable = runnable || (j.speed[t] > 0.0 && pool.types[t].count > 0);
  if (!runnable) {
    f.fail("speeds",
           fmt::format("job '{}' has a positive speed on no machine type the pool has machines of", j.name));
  }
  return j;
}

const toml::table& raw_table(const toml::table& doc, std::string_view key, std::size_t i) {
  return *doc.get(key)->as_array()->get(i)->as_table();
}

}  // namespace

std::size_t Pool::machines() const {
  std::size_t n = 0;
  for (const auto& t : types) n += t.count;
  return n;
}

std::size_t Job::cap() const { return max_workers == 0 ? global_batch : std::min(max_workers, global_batch); }

namespace {

Pool pool_from_toml(const toml::table& doc, const std::string& file) {
  const Fields root(doc, file, "");
  root.only({"network", "type"});
  Pool p;
  if (const auto net = root.table("network")) {
    net->only(
        {"bandwidth", "latency", "workers_per_node", "intra_bandwidth", "intra_latency", "bucket_bytes"});
    p.network.bandwidth = net->number("bandwidth", sim::kDefaultBandwidth);
    p.network.latency = net->number("latency", sim::kDefaultLatency, true);
    p.network.workers_per_node = net->count("workers_per_node", 0);
    p.network.intra_bandwidth = net->number("intra_bandwidth", p.network.bandwidth);
    p.network.intra_latency = net->number("intra_latency", p.network.latency, true);
    p.network.bucket_bytes = net->count("bucket_bytes", 0);
  }
  for (const auto& f : root.tables("type")) {
    f.only({"name", "count", "price_per_hour"});
    MachineType t;
    t.name = f.text("name", std::nullopt);
    t.count = f.count("count", std::nullopt);
    t.price_per_hour = f.number("price_per_hour", 0.0, true);
    p.types.push_back(t);
    refuse_duplicate(p.types, f, "machine type");
  }
  if (p.types.empty()) root.fail("type", "at least one [[type]] of machines is needed");
  if (p.machines() == 0) root.fail("type", "the pool holds no machines (every count is 0)");
  return p;
}

std::vector<Job> jobs_from_toml(const toml::table& doc, const std::string& file, const Pool& pool) {
  const Fields root(doc, file, "");
  root.only({"model", "job"});
  std::vector<ModelEntry> models;
  const auto model_fields = root.tables("model");
  for (std::size_t i = 0; i < model_fields.size(); ++i) {
    models.push_back(read_model(model_fields[i], raw_table(doc, "model", i), pool));
    refuse_duplicate(models, model_fields[i], "model");
  }
  std::vector<Job> jobs;
  const auto job_fields = root.tables("job");
  for (std::size_t i = 0; i < job_fields.size(); ++i) {
    jobs.push_back(read_job(job_fields[i], raw_table(doc, "job", i), pool, models));
    refuse_duplicate(jobs, job_fields[i], "job");
  }
  if (jobs.empty()) root.fail("job", "at least one [[job]] is needed");
  return jobs;
}

}  // namespace

Pool parse_pool(std::string_view text, const std::string& file) {
  return pool_from_toml(sim::parse_toml(text, file), file);
}

Pool load_pool(const std::string& path) { return pool_from_toml(sim::load_toml(path), path); }

std::vector<Job> parse_jobs(std::string_view text, const std::string& file, const Pool& pool) {
  return jobs_from_toml(sim::parse_toml(text, file), file, pool);
}

std::vector<Job> load_jobs(const std::string& path, const Pool& pool) {
  return jobs_from_toml(sim::load_toml(path), path, pool);
}

}  // namespace hetrain::sched
