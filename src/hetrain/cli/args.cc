#include "hetrain/cli/args.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "hetrain/cli/bench.h"
#include "hetrain/cli/config.h"
#include "hetrain/cli/launcher.h"
#include "hetrain/cli/pool_cmd.h"
#include "hetrain/cli/report_cmd.h"
#include "hetrain/cli/sim_cmd.h"
#include "hetrain/comm/allreduce.h"
#include "hetrain/comm/env.h"
#include "hetrain/comm/gloo/gloo_group.h"
#include "hetrain/common/error.h"
#include "hetrain/common/file_io.h"
#include "hetrain/report/progress.h"
#include "hetrain/train/stop.h"
#include "hetrain/train/trainer.h"

namespace hetrain::cli {
namespace {

constexpr const char* kExamples = R"(
Examples:
  hetrain run -n 4 --model cnn --epochs 3 --metrics cnn.json
  hetrain run -n 4 --speeds 1,1,1,0.25 --policy equal --epochs 1
  hetrain run -n 3 --policy static --shares 4,4,1 --data synthetic
  hetrain run -n 4 --policy adaptive --speeds 1,1,1,0.25 --slowdown 1@300:0.5
  hetrain run -n 4 --allreduce ring --policy adaptive
  hetrain run --config run.toml --epochs 5         # flags from a TOML file; --epochs overrides it
  hetrain bench allreduce -n 4 --algo gloo,ring --sizes 1M,16M,256M
  hetrain report runs/demo-equal.json runs/demo-adaptive.json -o report.html
  hetrain run -n 4 --checkpoint ck --checkpoint-every 100   # then, on any number of workers:
  hetrain run -n 5 --resume ck
  hetrain sim --cluster examples/mixed.toml --epochs 20
  hetrain plan --inventory examples/inventory.toml --epochs 90 --objective cost
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 hetrain worker --model mlp
  hetrain run -n 4 --checkpoint ck --checkpoint-every 50 --max-restarts 2   # restarts resume from ck
  torchrun --nproc_per_node 4 --redirects 1 --tee 1 --no_python hetrain worker --model mlp
  mpirun -np 4 hetrain worker --model cnn                  # one host; see docs/launching.md
  srun -n 4 hetrain worker --model cnn                     # MASTER_ADDR from the node list
)";

constexpr int kMaxRestarts = 1000;  // --max-restarts: a bound, not a goal

void add_launch_options(CLI::App& app, LaunchOptions& l) {
  app.add_option("-n,--nproc", l.nproc,
                 "Number of workers (run: processes to start; worker: must equal WORLD_SIZE)")
      ->check(CLI::Range(1, comm::kMaxWorkers));
  app.add_option("--master-addr", l.master_addr, "Rendezvous host (default: MASTER_ADDR or 127.0.0.1)");
  app.add_option("--master-port", l.master_port, "Rendezvous port (default: MASTER_PORT; run: a free port)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--max-restarts", l.max_restarts,
                 "run: after a worker fails, restart all workers up to this many times, resuming from the "
                 "checkpoint in --checkpoint DIR (worker: ignored; torchrun has --max_restarts)")
      ->check(CLI::Range(0, kMaxRestarts));
}

// Where the samples come from and what is learned of them.
void add_data_options(CLI::App& app, train::TrainOptions& o) {
  app.add_option("--data", o.data,
                 "fashion-mnist | synthetic | a directory of MNIST-format idx files, or of train_x.npy, "
                 "train_y.npy and optionally test_x.npy, test_y.npy")
      ->capture_default_str();
  app.add_option("--train-images,--train-x", o.train_images,
                 "Training images (idx3, gzip or plain) or inputs (.npy, memory-mapped)");
  app.add_option("--train-labels,--train-y", o.train_labels, "Training labels (idx1) or targets (.npy)");
  app.add_option("--test-images,--test-x", o.test_images, "Test images (idx3) or inputs (.npy, optional)");
  app.add_option("--test-labels,--test-y", o.test_labels, "Test labels (idx1) or targets (.npy, optional)");
  app.add_option("--loss", o.loss,
                 "cross-entropy | mse | bce-with-logits (default: cross-entropy for integer class labels, "
                 "mse for float targets)");
  app.add_option("--eval-every", o.eval_every,
                 "Also evaluate the test set every this many steps (0: at the end of each epoch only)");
  app.add_option("--synthetic-train", o.synthetic_train, "Synthetic training samples")->capture_default_str();
  app.add_option("--synthetic-test", o.synthetic_test, "Synthetic test samples")->capture_default_str();
}

// How the batch is split, and the heterogeneity emulated on one machine.
void add_allocation_options(CLI::App& app, train::TrainOptions& o) {
  app.add_option("--policy", o.alloc.name, "Allocation: equal | static | adaptive")->capture_default_str();
  app.add_option("--shares", o.alloc.shares,
                 "static: relative shares, one per worker (e.g. 4,4,4,1); without it, static profiles first")
      ->delimiter(',');
  app.add_option("--profile-steps", o.alloc.profile_steps,
                 "static without --shares: steps measured before the split is frozen")
      ->capture_default_str();
  app.add_option("--min-local-batch", o.alloc.bounds.min_local, "Smallest local batch of any worker");
  app.add_option_function<std::size_t>(
      "--max-local-batch",
      [&o](std::size_t cap) { o.alloc.bounds.max_local = cap == 0 ? alloc::Bounds{}.max_local : cap; },
      "Largest local batch of any worker (memory cap; 0: none)");
  app.add_option("--speeds", o.speeds,
                 "Emulated relative speeds s_i in (0,1], one per worker: worker i sleeps c*(1/s_i-1) after c "
                 "seconds of host compute")
      ->delimiter(',');
  app.add_option(
      "--sample-cost-ms", o.sample_cost_ms,
      "Emulated accelerator: each step also takes b x this many ms / s_i, slept in forward and backward");
  app.add_option_function<std::string>(
      "--slowdown", [&o](const std::string& v) { o.slowdowns = train::parse_slowdowns(v); },
      "Change emulated speeds mid-run: RANK@STEP:SPEED,... (e.g. 2@200:0.25; SPEED in (0,1])");
}

void add_train_options(CLI::App& app, train::TrainOptions& o) {
  add_data_options(app, o);
  add_allocation_options(app, o);
  app.add_option("--model", o.model,
                 "Model: mlp | cnn | resnet | a TorchScript file *.pt (torch.jit.script(m).save)")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs to train")->capture_default_str();
  app.add_option("-b,--global-batch", o.global_batch, "Global batch B, fixed whatever the split")
      ->capture_default_str();
  app.add_option("--max-steps", o.max_steps, "Stop after this many steps in all (0: no limit)");
  app.add_option("--optimizer", o.optimizer, "adam | sgd")->capture_default_str();
  app.add_option("--lr", o.lr, "Learning rate (default: 2e-3 adam, 0.05 sgd)");
  app.add_option("--lr-schedule", o.lr_schedule, "cosine (decays to 0 over the run) | constant")
      ->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the initial parameters and the data order")
      ->capture_default_str();
  app.add_option("--allreduce", o.allreduce,
                 "Gradient allreduce: auto (by message size) | gloo (c10d's) | ring | halving-doubling "
                 "(hetrain's own)")
      ->capture_default_str();
  app.add_option("--bucket-mb", o.bucket_mb, "Gradients are reduced in calls of at most this many MiB")
      ->capture_default_str();
  app.add_flag("!--no-overlap", o.overlap,
               "Reduce the gradients after backward instead of bucket by bucket during it");
  app.add_option("--metrics", o.metrics_path, "Write the run's metrics JSON here (rank 0)");
  app.add_option("--trace", o.trace_path,
                 "Write a per-worker timeline here (Chrome trace-event JSON: Perfetto, chrome://tracing)");
  app.add_option("--threads", o.threads, "Torch threads per worker (0: cores / local workers)");
  app.add_option("--kind", o.kind,
                 "This worker's hardware kind (e.g. its GPU's model): adaptive never plans workers of different "
                 "kinds as one unit");
  app.add_option("--timeout", o.timeout_seconds, "Seconds any rendezvous or collective may take")
      ->capture_default_str();
  app.add_flag("-q,--quiet", o.quiet, "Print nothing but errors (as --log-level error)");
  app.add_option("--log-level", o.log_level,
                 "error | warn | info (progress: a bar on a terminal, a line every 10 s otherwise) | "
                 "debug (a line every step)")
      ->capture_default_str()
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
  app.add_option("--checkpoint", o.checkpoint_dir,
                 "Write checkpoints (model, optimizer, cursor, learned speeds) to this directory");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "Steps between checkpoints (0: at the end of each epoch only)");
  app.add_option("--resume", o.resume_dir,
                 "Continue from the checkpoint in this directory, on any number of workers");
  app.add_option("--sample-log", o.sample_log, "(testing) log the sample indices each rank trains on")
      ->group("");
}

// "test accuracy 0.8512", "test rmse 0.2031"; "no test set" without one.
std::string metric_text(const std::string& metric, double value) {
  if (metric.empty()) return "no test set";
  std::string name = metric;
  std::replace(name.begin(), name.end(), '_', ' ');
  return fmt::format("test {} {:.4f}", name, value);
}

int default_threads(int local_workers) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores) / std::max(1, local_workers));
}

// Stopped on request after a step every rank agreed on: not an error, but
// not done either (rank 0 says where to continue).
int report_stop(const train::TrainOptions& o, const train::TrainResult& r, int rank) {
  if (rank == 0) {
    std::fprintf(stderr, "hetrain: stopped on request after step %zu; %s\n", r.stopped_at_step,
                 o.checkpoint_dir.empty()
                     ? "no --checkpoint DIR, nothing saved"
                     : fmt::format("checkpoint in {} (continue with --resume {})", o.checkpoint_dir,
                                   o.checkpoint_dir)
                           .c_str());
  }
  return static_cast<int>(ExitCode::kStopped);
}

// Stopped on request before every rank agreed on a step: before the group
// connected (nothing trained), or a peer left for the same request mid-step.
// The checkpoint folder holds its last complete checkpoint (written
// atomically), or none yet: the run continues from there, or starts again.
int report_early_stop(const train::TrainOptions& o, int rank, const char* when) {
  const bool saved = train::has_checkpoint(o.checkpoint_dir);
  std::fprintf(stderr, "hetrain: rank %d stopped on request %s; %s\n", rank, when,
               saved ? fmt::format("the last checkpoint in {} stands (continue with --resume {})",
                                   o.checkpoint_dir, o.checkpoint_dir)
                           .c_str()
                     : "no checkpoint yet (start again without --resume)");
  return static_cast<int>(ExitCode::kStopped);
}

// The group, or nothing when a request to stop ended the rendezvous: the
// signal interrupts c10d's connect (poll is never restarted), or a peer left
// for it. A stop while c10d waits ends the process there (comm/gloo/gloo_group.h).
std::optional<comm::Group> connect_unless_stopped(const comm::WorldInfo& world, std::chrono::milliseconds timeout) {
  try {
    return comm::connect_gloo(world, timeout, &train::stop_requested);
  } catch (const CommError&) {
    if (!train::stop_requested()) throw;
    return std::nullopt;
  }
}

int run_worker(train::TrainOptions o, const LaunchOptions& l) {
  comm::WorldInfo world = comm::world_from_env(comm::process_env());
  if (!l.master_addr.empty()) world.master_addr = l.master_addr;
  if (l.master_port != 0) world.master_port = l.master_port;
  if (l.nproc != 0 && l.nproc != world.world_size) {
    throw UsageError(fmt::format("-n {} but the environment says WORLD_SIZE {}", l.nproc, world.world_size));
  }
  const train::StopSignals stop_signals;  // a signal now stops after a step, with a checkpoint
  train::resume_after_restart(o, world.restart_count);
  train::validate(o, world.world_size);
  if (world.rank == 0 && !o.metrics_path.empty()) check_writable(o.metrics_path);
  if (world.rank == 0 && !o.trace_path.empty()) check_writable(o.trace_path);
  train::set_compute_threads(o.threads > 0 ? o.threads : default_threads(world.local_world_size));
  const auto data = train::load_dataset(o);
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_seconds * 1000.0));
  if (train::stop_requested()) return report_early_stop(o, world.rank, "before connecting to the other workers");
  std::optional<comm::Group> connected = connect_unless_stopped(world, timeout);
  if (!connected) return report_early_stop(o, world.rank, "while connecting to the other workers");
  comm::Group& group = *connected;
  const auto level = o.quiet ? report::LogLevel::kError : report::parse_log_level(o.log_level);
  const bool talk = group.rank() == 0 && level >= report::LogLevel::kInfo;
  report::Progress progress(std::cout, ::isatty(STDOUT_FILENO) != 0, level);
  const auto start = std::chrono::steady_clock::now();
  auto on_step = [&](const report::StepProgress& p) {
    if (talk)
      progress.step(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  if (talk) {
    fmt::print("hetrain: {} workers ({}), model {}, policy {}, B={}, {} training samples\n", group.size(),
               world.launcher == "none" ? "single process" : world.launcher, o.model, o.alloc.name, o.global_batch,
               data.train_size());
    std::fflush(stdout);
  }
  auto on_epoch = [&](const record::EpochRecord& e, const record::RunMetrics& m) {
    if (!talk) return;
    progress.break_line();
    fmt::print("epoch {}/{}  loss {:.4f}  {}  {:.1f} s  balance {:.3f}\n", e.epoch, o.epochs, e.train_loss,
               metric_text(m.metric, e.test_metric), e.seconds, record::balance_efficiency(m.steps));
    std::fflush(stdout);
  };
  train::TrainResult result;
  try {
    result = train::train(o, data, group, on_epoch, on_step);
  } catch (const CommError&) {
    // After a request to stop, a peer that left did so for it: a stop, not a failure.
    if (!train::stop_requested()) throw;
    return report_early_stop(o, group.rank(), "while a peer left for the same request");
  }
  if (result.stopped) return report_stop(o, result, group.rank());
  if (group.rank() == 0) {
    if (!o.metrics_path.empty()) write_file_atomic(o.metrics_path, record::to_json(result.metrics));
    if (talk && result.metrics.resumed_world_size > 0) {
      fmt::print("resumed from {} at epoch {} step {} (written by {} workers)\n", o.resume_dir,
                 result.metrics.resumed_epoch + 1, result.metrics.resumed_step,
                 result.metrics.resumed_world_size);
    }
    if (talk) {
      const double metric = result.metrics.epochs.empty() ? 0.0 : result.metrics.epochs.back().test_metric;
      fmt::print("done: {:.1f} s wall, {}, balance efficiency {:.3f}{}\n", result.metrics.wall_seconds,
                 metric_text(result.metrics.metric, metric), record::balance_efficiency(result.metrics.steps),
                 o.metrics_path.empty() ? "" : ", metrics in " + o.metrics_path);
    }
  }
  return 0;
}

// The worker's argv for `run`: ours, with the subcommand renamed.
std::vector<std::string> worker_args(int argc, char** argv) {
  std::vector<std::string> out;
  bool renamed = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!renamed && a == "run") a = "worker", renamed = true;
    out.push_back(a);
  }
  return out;
}

// `run` and `worker`: the same training flags, bound to one set each.
struct TrainCommands {
  train::TrainOptions run_opts, worker_opts;
  LaunchOptions run_launch, worker_launch;
  CLI::App* run = nullptr;
};

void add_train_commands(CLI::App& app, TrainCommands& t) {
  t.run = app.add_subcommand("run", "Start N local workers and train (like torchrun --nproc-per-node)");
  add_launch_options(*t.run, t.run_launch);
  add_train_options(*t.run, t.run_opts);
  auto* worker =
      app.add_subcommand("worker",
                         "One worker started by someone else: reads RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, "
                         "OMPI_COMM_WORLD_RANK/SIZE (mpirun) or SLURM_PROCID/NTASKS (srun)");
  add_launch_options(*worker, t.worker_launch);
  add_train_options(*worker, t.worker_opts);
  add_config_file(app, {t.run, worker});
}

// `run`: starts the workers on our own argument list, after checking the
// flags here, once, before any process starts.
int launch_run(const train::TrainOptions& o, const LaunchOptions& l, int argc, char** argv) {
  LaunchPlan plan;
  plan.nproc = l.nproc == 0 ? 1 : l.nproc;
  if (!l.master_addr.empty()) plan.master_addr = l.master_addr;
  plan.master_port = l.master_port;
  plan.max_restarts = l.max_restarts;
  train::validate(o, plan.nproc);
  auto args = worker_args(argc, argv);
  if (l.nproc == 0) args.insert(args.begin() + 1, {"-n", "1"});
  plan.worker_args = std::move(args);
  return launch(plan);
}

// Parses the command line; an exit code when that is all there is to do
// (help, version). A bad command line is a UsageError.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + " (see hetrain --help)");
  }
  return std::nullopt;
}

int dispatch(int argc, char** argv) {
  CLI::App app{"hetrain: synchronous data-parallel training on heterogeneous clusters", "hetrain"};
  app.require_subcommand(1);
  app.footer(kExamples);
  app.set_version_flag("--version", "hetrain 0.1.0");
  TrainCommands train_cmds;
  add_train_commands(app, train_cmds);
  BenchCommand bench_cmd;
  add_bench_command(app, bench_cmd);
  ReportOptions report_opts;
  auto* report = add_report_command(app, report_opts);
  SimCommands sim_cmds;
  add_sim_commands(app, sim_cmds);
  PoolCommand pool_cmd;
  add_pool_command(app, pool_cmd);

  if (auto rc = parse(app, argc, argv)) return *rc;
  if (auto rc = run_sim_commands(sim_cmds)) return *rc;
  if (auto rc = run_pool_command(pool_cmd)) return *rc;
  if (report->parsed()) return run_report(report_opts);
  if (auto rc = run_bench_command(bench_cmd, argc, argv)) return *rc;
  if (train_cmds.run->parsed()) return launch_run(train_cmds.run_opts, train_cmds.run_launch, argc, argv);
  return run_worker(train_cmds.worker_opts, train_cmds.worker_launch);
}

}  // namespace

int main_entry(int argc, char** argv) {
  // A peer that dies mid-transfer must surface as an error on the socket
  // (Gloo throws, the worker exits 4 with one line), never as a silent death
  // by SIGPIPE: Gloo writes with writev, which raises it.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return dispatch(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "hetrain: error: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::fprintf(stderr, "hetrain: error: %s\n", what.substr(0, what.find('\n')).c_str());
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace hetrain::cli
