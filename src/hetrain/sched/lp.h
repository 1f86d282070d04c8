// A linear program and the seam to the solver that solves it. The backend is
// picked in CMake, not with #ifdef: lp_glpk.cc (GLPK's simplex, libglpk-dev)
// with HETRAIN_WITH_GLPK=ON, lp_none.cc otherwise, whose solver is absent and
// leaves the planner its greedy fallback.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace hetrain::sched {

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// maximize (or minimize) c'x subject to lower_r <= a_r'x <= upper_r for
// every row r and lower_c <= x_c <= upper_c for every column c. Rows are
// sparse: (column, coefficient) pairs. +-kUnbounded leaves a side open.
struct LinearProgram {
  bool maximize = true;
  std::vector<double> objective;                   // one per column
  std::vector<double> column_lower, column_upper;  // one per column
  struct Row {
    std::vector<std::pair<std::size_t, double>> terms;
    double lower = -kUnbounded;
    double upper = kUnbounded;
  };
  std::vector<Row> rows;

  std::size_t add_column(double cost, double lower, double upper);  // its index
};

struct LpSolution {
  bool optimal = false;  // false: infeasible, unbounded or the solver gave up
  double value = 0.0;    // the objective at x
  std::vector<double> x;
};

// Whether this build has a solver, and its name ("GLPK 5.0", or "none").
bool lp_solver_available();
std::string lp_solver_name();

// Solves `lp`. Throws hetrain::Error when the build has no solver; a program
// with no optimum comes back with optimal = false.
LpSolution solve_lp(const LinearProgram& lp);

}  // namespace hetrain::sched
