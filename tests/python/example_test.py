#!/usr/bin/env python3
"""examples/pytorch/train_fashion_mnist.py trains under the real torchrun with 4 ranks (issue 28 point 1):
one epoch on the first 16,384 training images, DataLoader workers on, the adaptive policy; it must exit 0 and
score well above chance (10 classes: 0.10) on the whole test set. A CNN this size reaches ~0.75 here."""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_test  # noqa: E402

MIN_ACCURACY = 0.5  # far above chance, far below what one epoch gives


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--example", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    cmd = ["torchrun", "--redirects", "1", "--tee", "1", "--nproc_per_node", "4",
           "--master_port", str(ddp_test.free_port()), a.example, "--epochs", "1", "--limit", "16384",
           "--workers", "1", "-b", "256"]
    cmd[cmd.index(a.example)] = os.path.abspath(a.example)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=540, cwd=a.work)
    text = r.stdout + r.stderr
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{text[-4000:]}"
    m = re.search(r"epoch 1: train loss ([0-9.]+), test accuracy ([0-9.]+), split \[([0-9, ]+)\]", text)
    assert m, f"no epoch line in the output:\n{text[-3000:]}"
    split = [int(s) for s in m.group(3).split(",")]
    print(m.group(0))
    assert float(m.group(2)) >= MIN_ACCURACY, f"test accuracy {m.group(2)} after one epoch"
    assert len(split) == 4 and sum(split) == 256, split
    print("example: passed")


if __name__ == "__main__":
    main()
