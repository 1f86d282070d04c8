#!/usr/bin/env python3
"""Issue 28 point 4: the Observations hetrain.torch's live balancer hands the policy are the ones the C++
trainer hands it: same fields, same units (seconds), same meaning.

One job, run twice with 3 ranks: hetrain's mlp on Fashion-MNIST, B = 96 cut 32/32/32 (the equal policy, so
both train the same slices), an emulated device of 2 ms per sample with rank 1 at half speed (device-like:
rank 1 sleeps 128 ms a step, the others 64 ms). First the C++ trainer's own step (train::StepRunner, in
observation_recorder.cc, its policy wrapped to write each Observation down), then tests/python/ddp_worker.py
under the Balancer with record=True. Per rank, the medians of each field after the first steps must agree
within sqrt(2): a different meaning is a factor of 2 or more here (compute that included the wait for the
slow rank's gradients would double the fast ranks'; milliseconds for seconds would be 1000x), and the host
share of a step is a few ms that the 2-core machine's other load stretches. CPU-seconds are compared by what
they must satisfy on both sides (0 < cpu, cpu + wait <= compute, well below the compute when the device
dominates): Python's forward costs the host more CPU than C++'s, so their ratio says nothing about meaning.
Finally both sequences go into a fresh adaptive policy each: the same cluster must get the same split.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ddp_test  # noqa: E402

import hetrain  # noqa: E402

RANKS, STEPS, BATCH, COST_MS, SPEEDS = 3, 14, 96, 2.0, "1,0.5,1"
SKIP = 3  # first steps: lazy initialisation, and previous_step_seconds is 0 for the first two
AGREE = 2 ** 0.5  # see the docstring


def run_cpp(recorder, work):
    out = os.path.join(work, "cpp.jsonl")
    cmd = [ddp_test.PYTHON, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--no_python",
           "--nproc_per_node", str(RANKS), "--master_port", str(ddp_test.free_port()),
           recorder, out, str(STEPS), str(BATCH), str(COST_MS), SPEEDS]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=ddp_test.RUN_TIMEOUT)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}"
    return [json.loads(line) for line in open(out + ".0")]


def run_python(work):
    results, _ = ddp_test.launch(work, RANKS, ["--policy", "equal", "-b", str(BATCH), "--data", "fashion-mnist",
                                              "--model", "mlp", "--max-steps", str(STEPS), "--sample-cost-ms",
                                              str(COST_MS), "--speeds", SPEEDS])
    return results[0]["observations"]


def medians(observations, field):
    rows = [o[field] for o in observations[SKIP:]]
    if isinstance(rows[0], list):
        return [statistics.median(r[i] for r in rows) for i in range(RANKS)]
    return statistics.median(rows)


def agree(name, cpp, py):
    ratio = py / cpp if cpp > 0 else float("inf")
    print(f"  {name:28s} C++ {cpp * 1e3:8.2f} ms   Python {py * 1e3:8.2f} ms   ratio {ratio:5.2f}")
    assert 1 / AGREE <= ratio <= AGREE, f"{name}: Python {py:.4f} s vs C++ {cpp:.4f} s"


def held_split(observations):
    """Per rank, the median share the policy asks for after the first SKIP steps. Not the last step's: the
    steps were run at the equal split, never at the one the policy tries, so a trial it starts sees only the
    incumbent's step times and may end on any step (a revert to equal on the last one says nothing of meaning)."""
    policy = hetrain.make_policy("adaptive", RANKS, BATCH)
    asked = []
    for o in observations:
        obs = hetrain.Observation()
        obs.local_batch, obs.compute_seconds = o["local_batch"], o["compute_seconds"]
        obs.cpu_seconds, obs.wait_seconds = o["cpu_seconds"], o["wait_seconds"]
        obs.previous_step_seconds = o["previous_step_seconds"]
        policy.observe(obs)
        asked.append(policy.split())
    return [statistics.median_low(s[r] for s in asked[SKIP:]) for r in range(RANKS)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--recorder", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    cpp, py = run_cpp(a.recorder, a.work), run_python(a.work)
    assert len(cpp) == len(py) == STEPS, (len(cpp), len(py))
    assert set(cpp[0]) == set(py[0]) - {"step"}, (sorted(cpp[0]), sorted(py[0]))
    for c, q in zip(cpp, py):
        assert c["local_batch"] == q["local_batch"] == [BATCH // RANKS] * RANKS, (c["local_batch"], q["local_batch"])
        for o in (c, q):
            assert all(len(o[f]) == RANKS for f in ("compute_seconds", "cpu_seconds", "wait_seconds"))
    assert cpp[0]["previous_step_seconds"] == py[0]["previous_step_seconds"] == 0.0
    assert cpp[1]["previous_step_seconds"] == py[1]["previous_step_seconds"] == 0.0
    for field in ("compute_seconds", "wait_seconds"):
        for r, (c, q) in enumerate(zip(medians(cpp, field), medians(py, field))):
            agree(f"{field}[{r}]", c, q)
    agree("previous_step_seconds", medians(cpp, "previous_step_seconds"), medians(py, "previous_step_seconds"))
    for side, obs in (("C++", cpp), ("Python", py)):
        for r, (cpu, wait, compute) in enumerate(zip(*(medians(obs, f) for f in ("cpu_seconds", "wait_seconds",
                                                                                   "compute_seconds")))):
            print(f"  {side:6s} rank {r}: cpu {cpu * 1e3:6.2f} ms + wait {wait * 1e3:6.2f} ms <= compute "
                  f"{compute * 1e3:6.2f} ms")
            assert 0 < cpu and cpu + wait <= compute * 1.02 and cpu < 0.5 * compute, (side, r, cpu, wait, compute)
    split_cpp, split_py = held_split(cpp), held_split(py)
    print(f"  adaptive policy fed each: C++ {split_cpp}, Python {split_py}")
    # A meaning off by 2x moves the slow rank's share by 10 samples or more (to the equal 32, or below 13).
    # Python's forward costs the 2-core host more CPU (2.7-3.0 ms a step against 1.2-2.0), and with three ranks
    # on two cores the plan prices that CPU: the slow rank's share differs by up to 3 samples for that alone.
    assert all(abs(x - y) <= max(3, 0.1 * x) for x, y in zip(split_cpp, split_py)), (split_cpp, split_py)
    assert split_py[1] < split_py[0], f"the slow rank was not given less: {split_py}"
    print("observations: passed")


if __name__ == "__main__":
    main()
