// The LP backend over GLPK's primal simplex (Debian's libglpk-dev).
#include <fmt/format.h>
#include <glpk.h>

#include <memory>

#include "hetrain/common/error.h"
#include "hetrain/sched/lp.h"

namespace hetrain::sched {
namespace {

struct ProblemDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

// GLPK's kind of bound for [lower, upper], either side possibly open.
int bound_kind(double lower, double upper) {
  const bool lo = lower > -kUnbounded, hi = upper < kUnbounded;
  if (lo && hi) return lower == upper ? GLP_FX : GLP_DB;
  if (lo) return GLP_LO;
  return hi ? GLP_UP : GLP_FR;
}

double finite_or_zero(double v) { return v > -kUnbounded && v < kUnbounded ? v : 0.0; }

void load(glp_prob* p, const LinearProgram& lp) {
  glp_set_obj_dir(p, lp.maximize ? GLP_MAX : GLP_MIN);
  const int cols = static_cast<int>(lp.objective.size());
  glp_add_cols(p, cols);
  for (int c = 1; c <= cols; ++c) {
    const auto i = static_cast<std::size_t>(c - 1);
    glp_set_obj_coef(p, c, lp.objective[i]);
    glp_set_col_bnds(p, c, bound_kind(lp.column_lower[i], lp.column_upper[i]),
                     finite_or_zero(lp.column_lower[i]), finite_or_zero(lp.column_upper[i]));
  }
  if (lp.rows.empty()) return;
  glp_add_rows(p, static_cast<int>(lp.rows.size()));
  // GLPK's arrays are 1-based: element 0 is unused.
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0.0};
  for (std::size_t r = 0; r < lp.rows.size(); ++r) {
    const auto& row = lp.rows[r];
    const int ri = static_cast<int>(r + 1);
    glp_set_row_bnds(p, ri, bound_kind(row.lower, row.upper), finite_or_zero(row.lower),
                     finite_or_zero(row.upper));
    for (const auto& [col, coef] : row.terms) {
      ia.push_back(ri);
      ja.push_back(static_cast<int>(col + 1));
      ar.push_back(coef);
    }
  }
  glp_load_matrix(p, static_cast<int>(ar.size() - 1), ia.data(), ja.data(), ar.data());
}

}  // namespace

bool lp_solver_available() { return true; }

std::string lp_solver_name() { return fmt::format("GLPK {}", glp_version()); }

LpSolution solve_lp(const LinearProgram& lp) {
  HETRAIN_ENFORCE_EQ(lp.column_lower.size(), lp.objective.size());
  HETRAIN_ENFORCE_EQ(lp.column_upper.size(), lp.objective.size());
  LpSolution out;
  if (lp.objective.empty()) {
    out.optimal = true;
    return out;
  }
  const std::unique_ptr<glp_prob, ProblemDeleter> p(glp_create_prob());
  load(p.get(), lp);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;  // infeasible programs come back as a code, not a message
  const int rc = glp_simplex(p.get(), &parm);
  if (rc != 0 || glp_get_status(p.get()) != GLP_OPT) return out;
  out.optimal = true;
  out.value = glp_get_obj_val(p.get());
  out.x.resize(lp.objective.size());
  for (std::size_t c = 0; c < out.x.size(); ++c)
    out.x[c] = glp_get_col_prim(p.get(), static_cast<int>(c + 1));
  return out;
}

}  // namespace hetrain::sched
