// The LP backend of a build without a solver (HETRAIN_WITH_GLPK=OFF): the
// planner falls back to its greedy heuristic (docs/scheduling.md).
#include "hetrain/common/error.h"
#include "hetrain/sched/lp.h"

namespace hetrain::sched {

bool lp_solver_available() { return false; }

std::string lp_solver_name() { return "none"; }

LpSolution solve_lp(const LinearProgram& /*lp*/) {
  throw UsageError(
      "this hetrain was built without an LP solver (HETRAIN_WITH_GLPK=OFF): use --solver greedy");
}

}  // namespace hetrain::sched
