#include "hetrain/sched/lp.h"

namespace hetrain::sched {

std::size_t LinearProgram::add_column(double cost, double lower, double upper) {
  objective.push_back(cost);
  column_lower.push_back(lower);
  column_upper.push_back(upper);
  return objective.size() - 1;
}

}  // namespace hetrain::sched
