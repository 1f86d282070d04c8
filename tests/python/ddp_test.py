#!/usr/bin/env python3
"""hetrain.torch under real torch.distributed (Gloo on CPU), real processes and real launchers.

Each --case is one CTest test (tests/CMakeLists.txt). Ranks run tests/python/ddp_worker.py; the reference
is one process here, on the same global batches (hetrain.torch.epoch_order), with the same model and optimizer.
"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ddp_worker  # noqa: E402

PYTHON = "/usr/bin/python3"
TOLERANCE = 1e-5  # parameters of N ranks vs one process (float32 sums in another order)
RUN_TIMEOUT = 240  # seconds for one launched job


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(work, n, worker_args, launcher="run", expect_rc=0):
    """Runs n ranks of ddp_worker.py; returns (rank results, combined output)."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    port = str(free_port())
    if launcher == "run":
        cmd = [PYTHON, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--nproc_per_node", str(n),
               "--master_port", port]
    else:  # torch 1.13's launcher on Python 3.11 needs a redirect (docs/pytorch.md), whichever way it starts
        cmd = ["torchrun", "--redirects", "1", "--tee", "1", "--nproc_per_node", str(n), "--rdzv_backend", launcher,
               "--rdzv_endpoint" if launcher == "c10d" else "--master_port",
               f"127.0.0.1:{port}" if launcher == "c10d" else port]
        if launcher == "c10d":
            cmd += ["--rdzv_id", "hetrain_test"]
    cmd += [os.path.join(HERE, "ddp_worker.py"), "--out", out] + worker_args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    text = p.stdout + p.stderr
    if (p.returncode == 0) != (expect_rc == 0):
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode} (expected {expect_rc}):\n{text[-4000:]}")
    results = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, "rank*.json")))]
    return sorted(results, key=lambda r: r["rank"]), text


def reference(samples, global_batch, optimizer, lr, epochs=1):
    """One process on the same global batches: the mean loss over each whole batch."""
    data = ddp_worker.Synthetic(samples)
    model = ddp_worker.make_model()
    opt = ddp_worker.make_optimizer(optimizer, model.parameters(), lr)
    import hetrain.torch as ht
    for epoch in range(epochs):
        order = ht.epoch_order(samples, 3, epoch)
        for first in range(0, samples, global_batch):
            idx = order[first:first + global_batch]
            loss = F.cross_entropy(model(data.x[idx]), data.y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def check_exact(results, samples, global_batch, optimizer, lr, n):
    assert len(results) == n, f"{len(results)} ranks wrote results, expected {n}"
    ref = reference(samples, global_batch, optimizer, lr)
    for r in results:
        diff = (torch.tensor(r["params"]) - ref).abs().max().item()
        assert diff <= TOLERANCE, f"rank {r['rank']}: parameters differ from one process by {diff:.3g}"
        assert all(torch.isfinite(torch.tensor(r["params"]))), f"rank {r['rank']}: non-finite parameters"
    print(f"{n} ranks == 1 process within {TOLERANCE} ({optimizer}, {samples} samples, B={global_batch})")


def case_binding(work):
    import hetrain
    p = hetrain.make_policy("static", 3, 64, shares=[5, 17, 42])
    assert p.split() == [5, 17, 42], p.split()
    for kwargs, words in [(dict(name="static", workers=3, global_batch=64, shares=[1, 2]), "2 values but there are 3"),
                          (dict(name="fastest", workers=2, global_batch=8), "unknown policy 'fastest'"),
                          (dict(name="equal", workers=3, global_batch=64, bounds=hetrain.Bounds(0, 10)), "")]:
        try:
            hetrain.make_policy(**kwargs)
        except hetrain.UsageError as e:
            assert isinstance(e, ValueError) and words in str(e), (kwargs, str(e))
        else:
            raise AssertionError(f"make_policy({kwargs}) did not raise")
    assert hetrain.scale_split([5, 17, 42], 10, 1000) == [1, 3, 6]
    capped = hetrain.make_policy("static", 3, 64, shares=[5, 17, 42], bounds=hetrain.Bounds(0, 30)).split()
    assert max(capped) == 30 and sum(capped) == 64, capped  # a memory cap is kept, the rest goes elsewhere
    a = hetrain.make_policy("adaptive", 2, 64)
    for _ in range(2):
        o = hetrain.Observation()
        per_sample = [0.01, 0.04]  # rank 1 takes 4x as long per sample
        o.local_batch, o.compute_seconds = a.split(), [c * b for c, b in zip(per_sample, a.split())]
        a.observe(o)
    assert a.split()[0] > a.split()[1], a.split()
    deps = subprocess.run(["ldd", hetrain._core.__file__], capture_output=True, text=True).stdout
    # The libraries' names, not ldd's load addresses (a hex address can read "c10").
    names = [line.split()[0] for line in deps.splitlines() if line.strip()]
    assert not [n for n in names if "torch" in n or "c10" in n], f"hetrain._core links torch:\n{deps}"
    print("binding: policies, errors as hetrain.UsageError(ValueError), no libtorch:", a.split())


def exactness(work, optimizer, shares="5,17,42", launcher="run", extra=()):
    samples, b, lr = 650, 64, 0.05 if optimizer == "sgd" else 0.01  # 650: a short last batch of 10
    results, _ = launch(work, 3, ["--policy", "static", "--shares", shares, "--samples", str(samples),
                                  "--optimizer", optimizer, "--lr", str(lr)] + list(extra), launcher)
    check_exact(results, samples, b, optimizer, lr, 3)
    import hetrain
    first, planned = results[0]["observations"][0]["local_batch"], hetrain.make_policy(
        "static", 3, 64, shares=[float(s) for s in shares.split(",")]).split()
    assert first == planned, (first, planned)
    return results


def case_zero_rank(work):
    results = exactness(work, "sgd", shares="0.001,1,1")  # static refuses a share of 0
    assert all(not u["samples"] for u in results[0]["used"]), "the rank with share 0 trained on samples"
    assert all(o["local_batch"][0] == 0 for o in results[0]["observations"]), results[0]["observations"][0]
    print("a rank with 0 samples joins every step with a zero gradient")


def case_bad_inputs(work):
    bad = [(["--policy", "static", "--shares", "1,2"], "--shares has 2 values but there are 3 workers"),
           (["-b", "2"], "global_batch=2 must be an integer of at least the 3 ranks"),
           (["--policy", "equal", "--max-local", "10"], "3 workers x [0, 10] cannot hold 64 samples"),
           (["--policy", "adaptive", "--shares", "1,2,3"], "shares are for the static policy")]
    for args, words in bad:
        _, text = launch(work, 3, args, expect_rc=2)
        lines = [l for l in text.splitlines() if "UsageError" in l]
        assert lines and words in lines[0], f"{args}: no UsageError naming {words!r}:\n{text[-2000:]}"
        print(f"{args}: {lines[0].strip()}")
    in_process_misuse(work)


def in_process_misuse(work):
    """Misuse that needs one process only: a sampler without its balancer, a loader without the sampler."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader
    import hetrain
    import hetrain.torch as ht
    dist.init_process_group("gloo", init_method=f"file://{work}/store", rank=0, world_size=1)
    data = ddp_worker.Synthetic(64)
    checks = []
    try:
        ht.BatchSampler(data, None)
    except hetrain.UsageError as e:
        checks.append(("BatchSampler without a Balancer", str(e)))
    balancer = ht.Balancer("equal", global_batch=16)
    try:
        next(iter(DataLoader(data, batch_sampler=ht.BatchSampler(data, balancer))))
    except hetrain.UsageError as e:
        checks.append(("sampler iterated before attach()", str(e)))
    model = balancer.attach(DDP(ddp_worker.make_model()))
    x, y, _ = next(iter(DataLoader(data, batch_size=16)))
    try:
        model(x)
    except hetrain.UsageError as e:
        checks.append(("a loader without hetrain's sampler", str(e)))
    try:
        ht.Balancer("adaptive", global_batch=16).attach(ddp_worker.make_model())
    except hetrain.UsageError as e:
        checks.append(("attach() of a model that is not DDP", str(e)))
    dist.destroy_process_group()
    for what, message in checks:
        print(f"{what}: {message}")
    assert len(checks) == 4, f"only {len(checks)} of 4 misuses raised UsageError"


def case_resume(work):
    samples, b, lr = 650, 64, 0.05
    ckpt = os.path.join(work, "ckpt.pt")
    common = ["--policy", "static", "--shares", "5,17,42", "--samples", str(samples), "--epochs", "2"]
    first, _ = launch(work, 3, common + ["--checkpoint", ckpt, "--stop-after", "14"])
    second, _ = launch(work, 3, common + ["--resume", ckpt, "--num-workers", "2"])
    for epoch in (0, 1):
        seen = [s for r in first + second for u in r["used"] if u["epoch"] == epoch for s in u["samples"]]
        assert sorted(seen) == list(range(samples)), (
            f"epoch {epoch}: {len(seen)} samples used, {len(set(seen))} distinct, of {samples}")
    ref = reference(samples, b, "sgd", lr, epochs=2)
    diff = (torch.tensor(second[0]["params"]) - ref).abs().max().item()
    assert diff <= TOLERANCE, f"resumed run differs from one uninterrupted process by {diff:.3g}"
    print(f"resume after 14 of 22 steps (epoch 1, step 3): every sample once per epoch; "
          f"params == one process within {diff:.2g}")


def case_loader_workers(work):
    """num_workers=2 while the adaptive split moves: still exact, and the split did move."""
    samples, b, lr = 650, 64, 0.05
    results, _ = launch(work, 3, ["--policy", "adaptive", "--samples", str(samples), "--num-workers", "2",
                                  "--sample-cost-ms", "2", "--speeds", "1,0.3,1"])
    check_exact(results, samples, b, "sgd", lr, 3)
    splits = {tuple(o["local_batch"]) for o in results[0]["observations"] if sum(o["local_batch"]) == b}
    assert len(splits) > 1, f"the split never moved: {splits}"
    print(f"DataLoader num_workers=2, {len(splits)} distinct splits, exact")


def case_adaptive(work):
    b, speeds = 96, [1.0, 0.25, 1.0]
    results, _ = launch(work, 3, ["--policy", "adaptive", "-b", str(b), "--samples", str(b * 16),
                                  "--max-steps", "16", "--sample-cost-ms", "3", "--speeds", ",".join(map(str, speeds)),
                                  "--kinds", "fast,slow,fast"])
    # Each rank's kind, gathered through real torch.distributed: kinds numbered from 1 in rank order.
    assert all(r["kinds"] == [1, 2, 1] for r in results), [r["kinds"] for r in results]
    target = [b * s / sum(speeds) for s in speeds]
    near = lambda split: all(abs(x - t) <= max(0.1 * t, 1.0) for x, t in zip(split, target))  # 1: whole samples
    used = [o["local_batch"] for o in results[0]["observations"]]
    print("splits by step:", " ".join("/".join(map(str, s)) for s in used))
    first = next((k for k, s in enumerate(used) if near(s)), None)
    assert first is not None and first <= 10, f"not within 10% of {target} by step 10: {used[:11]}"
    assert near(used[-1]), f"left the proportional split {target}: {used[-1]}"
    print(f"within 10% of {[round(t, 1) for t in target]} from step {first} (0-based)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    cases = {
        "binding": case_binding,
        "exactness_sgd": lambda w: exactness(w, "sgd"),
        "exactness_adam": lambda w: exactness(w, "adam"),
        "zero_rank": case_zero_rank,
        "bad_inputs": case_bad_inputs,
        "resume": case_resume,
        "loader_workers": case_loader_workers,
        "adaptive": case_adaptive,
        "torchrun_static": lambda w: exactness(w, "sgd", launcher="static"),
        "torchrun_c10d": lambda w: exactness(w, "sgd", launcher="c10d"),
    }
    cases[a.case](a.work)
    print(f"{a.case}: passed")


if __name__ == "__main__":
    main()
