// The Gloo backend: c10d's TCPStore for rendezvous and ProcessGroupGloo for
// every collective, over TCP. Nothing home-made on the wire.
#pragma once

#include <chrono>
#include <memory>

#include "hetrain/comm/env.h"
#include "hetrain/comm/group.h"

namespace hetrain::comm {

// Rendezvous through a TCPStore served by rank 0 at master_addr:master_port.
// `timeout` bounds the rendezvous and every later collective.
Group connect_gloo(const WorldInfo& world, std::chrono::milliseconds timeout);

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
