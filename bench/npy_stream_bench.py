#!/usr/bin/env python3
"""Streaming a .npy data set larger than the memory it may use (issue 19, docs/benchmarks.md "Streaming .npy").

1. Writes an 8 GiB uint8 train_x.npy of shape (2097152, 64, 64) (rows: 4 KiB images, 10 class prototypes plus
   a per-row shift) with int64 labels, and a small test set, with NumPy (np.lib.format.open_memmap, in chunks:
   never 8 GiB in memory), after checking the disk has room; fsyncs it and drops its pages from the page
   cache (posix_fadvise DONTNEED), so the workers read it from disk and their reads are charged to them.
2. Creates a cgroup v1 memory group with memory.limit_in_bytes = 2 GiB (and memsw, so no swap helps) and runs
   `hetrain run -n 4` inside it (the launcher joins the group first; its workers inherit it) for --steps steps
   of the mlp with global batch B: each worker reads only its own rows, memory-mapped, a step ahead.
3. Samples every worker's VmHWM (peak resident set) and VmRSS from /proc while it runs, and reports: whether
   the run completed, the group's peak charge (memory.max_usage_in_bytes) and memory.failcnt, each worker's
   peak RSS, and each worker's input wait (metrics: workers[].input_wait_seconds) against the training time.
4. Deletes the data set (unless --keep) and the cgroup.

Needs root (cgroups), /usr/bin/python3 with NumPy, and 8 GiB + 1 GiB free under --dir.
Usage: /usr/bin/python3 bench/npy_stream_bench.py --hetrain build/hetrain [--dir /work/npy-bench] [--steps 1000]
A smoke run of the script itself (not the measurement): --rows 65536 --steps 50 (256 MiB, under the same limit).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

GIB = 1 << 30
ROWS, SIDE = 2 * 1024 * 1024, 64  # 2 Mi rows of 64x64 uint8 = 8 GiB (--rows: fewer, for a smoke run)
CLASSES = 10
TEST_ROWS = 2048
CHUNK_ROWS = 1 << 15  # 128 MiB written at a time
MARGIN_BYTES = 1 * GIB  # free disk kept beyond the data set
MEMORY_LIMIT = 2 * GIB
CGROUP = "/sys/fs/cgroup/memory/hetrain_npy_bench"
SAMPLE_SECONDS = 0.5  # /proc sampling period
MAX_INPUT_FRACTION = 0.05  # the target: input wait <= 5% of step time
PREFETCH_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "hetrain", "train", "prefetch.h")


def write_set(d, rng, rows):
    free = shutil.disk_usage(d).free
    need = rows * SIDE * SIDE + MARGIN_BYTES
    if free < need:
        sys.exit(f"npy_stream_bench: {d} has {free / GIB:.1f} GiB free, needs {need / GIB:.1f}")
    protos = rng.integers(0, 200, size=(CLASSES, SIDE, SIDE), dtype=np.uint8)
    y = rng.integers(0, CLASSES, size=rows).astype(np.int64)
    np.save(os.path.join(d, "train_y.npy"), y)
    path = os.path.join(d, "train_x.npy")
    x = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=(rows, SIDE, SIDE))
    t0 = time.time()
    for b in range(0, rows, CHUNK_ROWS):
        e = min(rows, b + CHUNK_ROWS)
        shift = (np.arange(b, e, dtype=np.uint32) % 56).astype(np.uint8)
        x[b:e] = protos[y[b:e]] + shift[:, None, None]
    x.flush()
    del x
    ty = rng.integers(0, CLASSES, size=TEST_ROWS).astype(np.int64)
    np.save(os.path.join(d, "test_y.npy"), ty)
    np.save(os.path.join(d, "test_x.npy"), protos[ty] + rng.integers(0, 56, size=(TEST_ROWS, 1, 1), dtype=np.uint8))
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the workers must read from disk
    os.close(fd)
    print(f"npy_stream_bench: wrote {path} ({os.path.getsize(path) / GIB:.2f} GiB) in {time.time() - t0:.0f} s",
          flush=True)


def cgroup_up():
    if os.geteuid() != 0:
        sys.exit("npy_stream_bench: needs root (a cgroup v1 memory group)")
    os.makedirs(CGROUP, exist_ok=True)
    for f in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
        p = os.path.join(CGROUP, f)
        if os.path.exists(p):
            open(p, "w").write(str(MEMORY_LIMIT))


def cgroup_read(name):
    return int(open(os.path.join(CGROUP, name)).read())


def proc_kib(pid, key):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def sample_workers(launcher_pid, peaks, done):
    """Peak VmHWM per worker pid (the launcher's children), until done is set."""
    while not done.is_set():
        try:
            kids = open(f"/proc/{launcher_pid}/task/{launcher_pid}/children").read().split()
        except OSError:
            kids = []
        for k in kids:
            hwm = proc_kib(int(k), "VmHWM")
            if hwm is not None:
                peaks[int(k)] = max(peaks.get(int(k), 0), hwm)
        time.sleep(SAMPLE_SECONDS)


def train(a, d):
    metrics = os.path.join(d, "metrics.json")
    cmd = [a.hetrain, "run", "-n", "4", "--data", d, "--model", "mlp", "-b", str(a.batch), "--max-steps",
           str(a.steps), "--threads", "1", "--metrics", metrics, "--log-level", "warn"]
    # The launcher joins the group before exec; its workers inherit it.
    wrapped = ["/bin/sh", "-c", f'echo $$ > {CGROUP}/cgroup.procs && exec "$@"', "sh"] + cmd
    print("npy_stream_bench: " + " ".join(cmd) + f"  (in {CGROUP}, limit {MEMORY_LIMIT / GIB:.0f} GiB)", flush=True)
    t0 = time.time()
    p = subprocess.Popen(wrapped)
    peaks, done = {}, threading.Event()
    sampler = threading.Thread(target=sample_workers, args=(p.pid, peaks, done))
    sampler.start()
    rc = p.wait()
    done.set()
    sampler.join()
    return rc, time.time() - t0, metrics, peaks


def prefetch_depth():
    """The steps each worker reads ahead (Prefetcher::kDepth in the source this bench sits next to)."""
    try:
        m = re.search(r"kDepth = (\d+);", open(PREFETCH_H).read())
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def report(a, rc, wall, metrics, peaks):
    print(f"npy_stream_bench: exit {rc}, {wall:.1f} s; prefetch: {prefetch_depth()} steps read ahead, "
          f"the step after hinted")
    group_peak, failcnt = cgroup_read("memory.max_usage_in_bytes"), cgroup_read("memory.failcnt")
    print(f"cgroup: limit {MEMORY_LIMIT / GIB:.2f} GiB, peak charge {group_peak / GIB:.3f} GiB, "
          f"limit hit {failcnt} times (reclaim)")
    for i, (pid, kib) in enumerate(sorted(peaks.items())):
        print(f"worker pid {pid}: peak RSS (VmHWM) {kib / 1024:.0f} MiB")
    if rc != 0 or not os.path.exists(metrics):
        return False
    m = json.load(open(metrics))
    steps = len(m["allocation"])
    train_s = sum(e["train_seconds"] for e in m["epochs"])
    print(f"steps {steps}, training {train_s:.1f} s ({1000 * train_s / steps:.1f} ms/step), "
          f"test accuracy {m['epochs'][-1]['test_accuracy']:.3f}")
    worst = 0.0
    for w in m["workers"]:
        frac = w["input_wait_seconds"] / train_s
        worst = max(worst, frac)
        print(f"rank {w['rank']}: {w['samples']} samples, input wait {w['input_wait_seconds']:.2f} s "
              f"= {100 * frac:.2f}% of the step time, compute {w['compute_seconds']:.1f} s")
    print(f"input wait: worst worker {100 * worst:.2f}% of the step time (target <= {100 * MAX_INPUT_FRACTION:.0f}%)")
    return worst <= MAX_INPUT_FRACTION and steps >= a.steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--dir", default="/work/npy-bench")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--rows", type=int, default=ROWS, help="training rows (4 KiB each); fewer for a smoke run")
    ap.add_argument("--keep", action="store_true", help="keep the data set")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    ok = False
    try:
        write_set(a.dir, np.random.default_rng(19), a.rows)
        cgroup_up()
        ok = report(a, *train(a, a.dir))
    finally:
        if not a.keep:
            for f in ("train_x.npy", "train_y.npy", "test_x.npy", "test_y.npy"):
                p = os.path.join(a.dir, f)
                if os.path.exists(p):
                    os.remove(p)
        if os.path.isdir(CGROUP):
            try:
                os.rmdir(CGROUP)
            except OSError as e:
                print(f"npy_stream_bench: could not remove {CGROUP}: {e}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
