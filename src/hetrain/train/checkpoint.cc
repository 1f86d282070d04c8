#include "hetrain/train/checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/record/metrics.h"

namespace hetrain::train {
namespace {

namespace fs = std::filesystem;

std::string to_json(const CheckpointMeta& m) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : m.workers) workers.push_back({{"overhead", w.overhead}, {"speed", w.speed}});
  return nlohmann::json{{"model", m.model},
                        {"optimizer", m.optimizer},
                        {"seed", m.seed},
                        {"global_batch", m.global_batch},
                        {"train_samples", m.train_samples},
                        {"epoch", m.epoch},
                        {"step", m.step},
                        {"total_steps", m.total_steps},
                        {"world_size", m.world_size},
                        {"workers", workers}}
      .dump();
}

CheckpointMeta from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  CheckpointMeta m;
  m.model = j.at("model").get<std::string>();
  m.optimizer = j.at("optimizer").get<std::string>();
  m.seed = j.at("seed").get<std::uint64_t>();
  m.global_batch = j.at("global_batch").get<std::size_t>();
  m.train_samples = j.at("train_samples").get<std::size_t>();
  m.epoch = j.at("epoch").get<std::size_t>();
  m.step = j.at("step").get<std::size_t>();
  m.total_steps = j.at("total_steps").get<std::size_t>();
  m.world_size = j.at("world_size").get<int>();
  for (const auto& w : j.at("workers")) m.workers.push_back({w.at("overhead"), w.at("speed")});
  return m;
}

template <typename T>
void require_same(const std::string& path, const char* what, const T& saved, const T& now) {
  if (saved != now) {
    throw DataError(fmt::format("checkpoint {} was written with {} {}, this run has {}", path, what, saved, now));
  }
}

}  // namespace

void save_checkpoint(const std::string& dir, const CheckpointMeta& meta, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw DataError(fmt::format("cannot create checkpoint directory {}: {}", dir, ec.message()));
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive, model_part, optimizer_part;
    model.save(model_part);
    optimizer.save(optimizer_part);
    archive.write("model", model_part);
    archive.write("optimizer", optimizer_part);
    archive.write("meta", c10::IValue(to_json(meta)));
    archive.save_to(bytes);
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("cannot serialise the checkpoint: {}", first_line(e.what_without_backtrace())));
  }
  write_file_atomic((fs::path(dir) / kCheckpointFile).string(), bytes.str());
}

CheckpointMeta load_checkpoint(const std::string& dir, const CheckpointMeta& expect, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer) {
  const std::string path = (fs::path(dir) / kCheckpointFile).string();
  if (!fs::is_regular_file(path)) throw DataError(fmt::format("no checkpoint at {}", path));
  CheckpointMeta meta;
  torch::serialize::InputArchive archive, model_part, optimizer_part;
  try {
    archive.load_from(path);
    c10::IValue text;
    archive.read("meta", text);
    meta = from_json(text.toStringRef());
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("checkpoint {} is not readable: {}", path, first_line(e.what_without_backtrace())));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("checkpoint {} has a corrupt header: {}", path, e.what()));
  }
  require_same(path, "model", meta.model, expect.model);
  require_same(path, "optimizer", meta.optimizer, expect.optimizer);
  require_same(path, "seed", meta.seed, expect.seed);
  require_same(path, "global batch", meta.global_batch, expect.global_batch);
  require_same(path, "training samples", meta.train_samples, expect.train_samples);
  try {
    archive.read("model", model_part);
    model.load(model_part);
    archive.read("optimizer", optimizer_part);
    optimizer.load(optimizer_part);
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("checkpoint {} does not fit this model or optimizer: {}", path,
                                first_line(e.what_without_backtrace())));
  }
  return meta;
}

}  // namespace hetrain::train
