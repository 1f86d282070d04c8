"""hetrain: heterogeneous data-parallel training.

The allocation core (the C++ policies of src/hetrain/alloc) as hetrain._core;
hetrain.torch adds uneven per-rank batches and adaptive allocation to a
PyTorch DDP script (docs/pytorch.md).
"""
from hetrain._core import (  # noqa: F401
    DEFAULT_PROFILE_STEPS, NO_HOST, Bounds, CommError, DataError, Error, Observation, Placement, Policy,
    PolicyStats, UsageError, WorkerModel, WorkerPlace, check_feasible, make_policy, placement_of, scale_split,
    this_worker)
