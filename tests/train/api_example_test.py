#!/usr/bin/env python3
"""examples/custom_model.cc, hetrain's C++ API with a model and data set of
its own: alone, and as two processes rendezvousing through torchrun's
variables, it trains to a high test accuracy, and with two ranks (rank 1
emulated 2x slower) the adaptive policy moves the split away from equal."""
import argparse
import re
import socket
import subprocess
import sys

MIN_ACCURACY = 0.9  # 4 classes: chance is 0.25; the rows are easy to tell apart


def fail(msg):
    print(f"api_example_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accuracy(out):
    m = re.search(r"done: test accuracy ([0-9.]+), last split ([0-9/]+)", out)
    if not m:
        fail(f"no result line in {out!r}")
    return float(m.group(1)), [int(x) for x in m.group(2).split("/")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", required=True)
    a = ap.parse_args()
    p = subprocess.run([a.example], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"one process: exit {p.returncode}: {p.stderr}")
    acc1, _ = accuracy(p.stdout)

    port = str(free_port())
    procs = [subprocess.Popen([a.example], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={"RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                                   "MASTER_PORT": port, "PATH": "/usr/bin:/bin"}) for r in (0, 1)]
    outs = [pr.communicate(timeout=300) for pr in procs]
    for r, (pr, (out, err)) in enumerate(zip(procs, outs)):
        if pr.returncode != 0:
            fail(f"rank {r} of 2: exit {pr.returncode}: {err}")
    acc2, split = accuracy(outs[0][0])
    if outs[1][0]:
        fail(f"rank 1 printed {outs[1][0]!r}; only rank 0 reports")
    if min(acc1, acc2) <= MIN_ACCURACY:
        fail(f"test accuracy {acc1:.3f} (1 process), {acc2:.3f} (2 processes); expected > {MIN_ACCURACY}")
    if len(split) != 2 or split[0] <= split[1]:
        fail(f"the adaptive split should favour the fast rank 0, last split {split}")
    print(f"api_example_test: ok: accuracy {acc1:.4f} (1 process), {acc2:.4f} (2), last split {split}")


if __name__ == "__main__":
    main()
