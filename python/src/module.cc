// hetrain._core: the allocation core (src/hetrain/alloc) for Python, with
// pybind11. A thin binding: Python objects own C++ values, hetrain's
// exceptions become Python exceptions with the C++ message, and no decision
// is taken here. No torch: the module works beside any PyTorch build.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "hetrain/alloc/policy.h"
#include "hetrain/alloc/split.h"
#include "hetrain/common/error.h"
#include "hetrain/train/placement.h"

namespace py = pybind11;
using namespace hetrain;

namespace {

// The one place that builds the policy's configuration from Python's
// arguments: if alloc/ renames or extends PolicyConfig, only this changes.
alloc::PolicyConfig config_of(const std::string& name, std::size_t workers, std::size_t global_batch,
                              const std::vector<double>& shares, std::size_t profile_steps,
                              const alloc::Bounds& bounds, const std::vector<alloc::WorkerModel>& known,
                              const alloc::Placement& placement) {
  alloc::PolicyConfig c;
  c.name = name;
  c.workers = workers;
  c.global_batch = global_batch;
  c.shares = shares;
  c.profile_steps = profile_steps;
  c.bounds = bounds;
  c.known = known;
  c.placement = placement;
  return c;
}

// Exceptions: hetrain.Error (a RuntimeError) and one subclass per C++ class;
// UsageError is also a ValueError, as Python callers expect of bad arguments.
void bind_errors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<UsageError> usage(m, "UsageError", py::make_tuple(error, py::handle(PyExc_ValueError)));
  static py::exception<DataError> data(m, "DataError", error.ptr());
  static py::exception<CommError> comm(m, "CommError", error.ptr());
  // Translators run newest first: the most derived classes are registered last.
  // pybind11 takes a void(*)(std::exception_ptr): by value.
  py::register_exception_translator([](std::exception_ptr p) {  // NOLINT(performance-unnecessary-value-param)
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UsageError& e) {
      usage(e.what());
    } catch (const DataError& e) {
      data(e.what());
    } catch (const CommError& e) {
      comm(e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });
}

void bind_values(py::module_& m) {
  py::class_<alloc::Bounds>(m, "Bounds", "Per-worker bounds on the local batch, in samples.")
      .def(py::init([](std::size_t min_local, std::size_t max_local) { return alloc::Bounds{min_local, max_local}; }),
           py::arg("min_local") = alloc::Bounds{}.min_local, py::arg("max_local") = alloc::Bounds{}.max_local)
      .def_readwrite("min_local", &alloc::Bounds::min_local)
      .def_readwrite("max_local", &alloc::Bounds::max_local);
  py::class_<alloc::WorkerModel>(m, "WorkerModel", "t(b) = overhead + b / speed (seconds, samples per second).")
      .def(py::init([](double overhead, double speed) { return alloc::WorkerModel{overhead, speed}; }),
           py::arg("overhead") = 0.0, py::arg("speed") = 1.0)
      .def_readwrite("overhead", &alloc::WorkerModel::overhead)
      .def_readwrite("speed", &alloc::WorkerModel::speed)
      .def("__repr__", [](const alloc::WorkerModel& w) {
        return "WorkerModel(overhead=" + std::to_string(w.overhead) + ", speed=" + std::to_string(w.speed) + ")";
      });
  py::class_<alloc::Placement>(m, "Placement", "Which workers share a host's cores (empty: none do).")
      .def(py::init<>())
      .def_readwrite("host", &alloc::Placement::host)
      .def_readwrite("cpus", &alloc::Placement::cpus)
      .def_readwrite("host_cores", &alloc::Placement::host_cores)
      .def_readwrite("kind", &alloc::Placement::kind)
      .def("shared", &alloc::Placement::shared)
      .def("oversubscribed", &alloc::Placement::oversubscribed)
      .def("check", &alloc::Placement::check, py::arg("workers"));
  m.attr("NO_HOST") = alloc::kNoHost;
  py::class_<alloc::Observation>(m, "Observation", "What every worker knows after a step (alloc/policy.h).")
      .def(py::init<>())
      .def_readwrite("local_batch", &alloc::Observation::local_batch)
      .def_readwrite("compute_seconds", &alloc::Observation::compute_seconds)
      .def_readwrite("previous_step_seconds", &alloc::Observation::previous_step_seconds)
      .def_readwrite("cpu_seconds", &alloc::Observation::cpu_seconds)
      .def_readwrite("wait_seconds", &alloc::Observation::wait_seconds);
  py::class_<alloc::PolicyStats>(m, "PolicyStats")
      .def_readonly("moves", &alloc::PolicyStats::moves)
      .def_readonly("reverts", &alloc::PolicyStats::reverts);
}

void bind_policy(py::module_& m) {
  py::class_<alloc::Policy>(m, "Policy", "An allocation policy: the same observations give the same split.")
      .def("split", &alloc::Policy::split)
      .def("observe", &alloc::Policy::observe, py::arg("observation"))
      .def("learned", &alloc::Policy::learned)
      .def("stats", &alloc::Policy::stats);
  m.def(
      "make_policy",
      [](const std::string& name, std::size_t workers, std::size_t global_batch, const std::vector<double>& shares,
         std::size_t profile_steps, const alloc::Bounds& bounds, const std::vector<alloc::WorkerModel>& known,
         const alloc::Placement& placement) {
        return alloc::make_policy(
            config_of(name, workers, global_batch, shares, profile_steps, bounds, known, placement));
      },
      py::arg("name"), py::arg("workers"), py::arg("global_batch"), py::arg("shares") = std::vector<double>{},
      py::arg("profile_steps") = alloc::kDefaultProfileSteps, py::arg("bounds") = alloc::Bounds{},
      py::arg("known") = std::vector<alloc::WorkerModel>{}, py::arg("placement") = alloc::Placement{},
      "equal | static (with shares, or profiled) | adaptive; raises UsageError for a bad configuration.");
  m.def("scale_split", &alloc::scale_split, py::arg("full"), py::arg("total"), py::arg("max_local"),
        "The split of a short final batch in the proportions of the full split.");
  m.def("check_feasible", &alloc::check_feasible, py::arg("workers"), py::arg("total"), py::arg("bounds"));
  m.attr("DEFAULT_PROFILE_STEPS") = alloc::kDefaultProfileSteps;
}

void bind_placement(py::module_& m) {
  py::class_<train::WorkerPlace>(m, "WorkerPlace", "What one worker says of itself (train/placement.h).")
      .def(py::init([](double host_id, double cpus, double host_cores, double kind_id) {
             return train::WorkerPlace{host_id, cpus, host_cores, kind_id};
           }),
           py::arg("host_id"), py::arg("cpus"), py::arg("host_cores"), py::arg("kind_id") = 0.0)
      .def_readwrite("host_id", &train::WorkerPlace::host_id)
      .def_readwrite("cpus", &train::WorkerPlace::cpus)
      .def_readwrite("host_cores", &train::WorkerPlace::host_cores)
      .def_readwrite("kind_id", &train::WorkerPlace::kind_id);
  m.def(
      "this_worker", [](int threads, const std::string& kind) { return train::this_worker(threads, kind); },
      py::arg("threads"), py::arg("kind") = "",
      "This process computing with `threads` threads, of `kind` (a device's model; \"\": not said): its host, "
      "CPUs (threads, affinity, cgroup quota), host cores, kind id.");
  m.def(
      "placement_of", [](const std::vector<train::WorkerPlace>& w) { return train::placement_of(w); },
      py::arg("workers"), "The placement from every rank's WorkerPlace, in rank order.");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "hetrain's allocation core (C++, no torch)";
  bind_errors(m);
  bind_values(m);
  bind_policy(m);
  bind_placement(m);
}
