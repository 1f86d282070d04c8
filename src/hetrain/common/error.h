// Errors: hetrain throws exceptions from this small hierarchy and turns them
// into a one-line message and an exit code in exactly one place
// (cli::main_entry, cli/args.cc). See docs/errors.md for the policy.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace hetrain {

// Exit codes, one per error class, so scripts can tell them apart.
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,  // a bug or an unexpected library failure
  kUsage = 2,     // bad flags or inconsistent configuration
  kData = 3,      // missing, truncated or corrupt input files
  kComm = 4,      // rendezvous, collectives, timeouts, a dead peer
  kWorker = 5,    // the launcher saw a worker fail
  // Not an error: stopped on request (SIGTERM, SIGINT, SIGUSR1) after a step
  // every rank agreed on, with a checkpoint; launchers must not restart it.
  kStopped = 6,
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ExitCode code = ExitCode::kInternal)
      : std::runtime_error(what), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// The user asked for something that cannot work (flags, configuration).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, ExitCode::kUsage) {}
};

// An input file is missing or malformed.
class DataError : public Error {
 public:
  explicit DataError(const std::string& what) : Error(what, ExitCode::kData) {}
};

// Rendezvous or a collective failed or timed out.
class CommError : public Error {
 public:
  explicit CommError(const std::string& what) : Error(what, ExitCode::kComm) {}
};

// Library errors (c10d's, torch's) carry multi-line backtraces; a one-line
// message keeps the first line only (docs/errors.md).
inline std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

namespace detail {
template <typename A, typename B>
std::string enforce_message(const char* expr, const A& a, const B& b, const char* file, int line,
                            const std::string& what) {
  std::ostringstream os;
  os << what << " (" << expr << ": " << a << " vs " << b << " at " << file << ":" << line << ")";
  return os.str();
}
}  // namespace detail

}  // namespace hetrain

// Internal invariants: report both values, file and line. For user input,
// throw UsageError/DataError with a message that names the problem instead.
#define HETRAIN_ENFORCE_OP(a, b, op)                                                                       \
  do {                                                                                                     \
    const auto& hetrain_a_ = (a);                                                                          \
    const auto& hetrain_b_ = (b);                                                                          \
    if (!(hetrain_a_ op hetrain_b_)) {                                                                     \
      throw ::hetrain::Error(::hetrain::detail::enforce_message(#a " " #op " " #b, hetrain_a_, hetrain_b_, \
                                                                __FILE__, __LINE__, "internal error"));    \
    }                                                                                                      \
  } while (0)
#define HETRAIN_ENFORCE_EQ(a, b) HETRAIN_ENFORCE_OP(a, b, ==)
#define HETRAIN_ENFORCE_LE(a, b) HETRAIN_ENFORCE_OP(a, b, <=)
#define HETRAIN_ENFORCE_LT(a, b) HETRAIN_ENFORCE_OP(a, b, <)
#define HETRAIN_ENFORCE_GE(a, b) HETRAIN_ENFORCE_OP(a, b, >=)
