// The Gloo backend: c10d's TCPStore for rendezvous and ProcessGroupGloo for
// every collective, over TCP. Nothing home-made on the wire.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "hetrain/comm/env.h"
#include "hetrain/comm/group.h"

namespace hetrain::comm {

// Rendezvous through a TCPStore served by rank 0 at master_addr:master_port.
// `timeout` bounds the rendezvous and every later collective. `stop`, when
// given, is read while connecting: once it is true the process ends with
// exit code 6 (a stop on request before any step: nothing to save), since c10d's
// blocked waits cannot be woken to return (docs/errors.md).
Group connect_gloo(const WorldInfo& world, std::chrono::milliseconds timeout, std::function<bool()> stop = {});

// In-process rendezvous for threads-as-ranks tests: one shared in-memory
// store; each thread calls connect_gloo(rendezvous, rank, size, timeout).
class InProcessRendezvous {
 public:
  InProcessRendezvous();
  ~InProcessRendezvous();
  InProcessRendezvous(const InProcessRendezvous&) = delete;
  InProcessRendezvous& operator=(const InProcessRendezvous&) = delete;
  struct State;
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};
Group connect_gloo(InProcessRendezvous& rendezvous, int rank, int size, std::chrono::milliseconds timeout);

}  // namespace hetrain::comm
