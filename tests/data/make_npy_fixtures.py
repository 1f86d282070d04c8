#!/usr/bin/env python3
"""Writes the .npy files the npy tests read, with real NumPy (Debian's python3-numpy).

Good sets:
  reg/      a linear regression problem: train_x (512, 20) float32, train_y (512,) float32, test_* (256, ...)
  cls/      4 classes of 6x6 uint8 images: train_x (400, 6, 6), train_y (400,) int64, test_* (100, ...)
  multi/    multi-label: float16 inputs (300, 12), float32 0/1 targets (300, 3); no test files
  multi_eval/ multi-label with test files: float16 inputs (2000, 12) / (500, 12), float32 0/1 targets, label j
            set where input j passes a threshold; the thresholds make the labels' base rates about 0.5, 0.3
            and 0.2 (so a constant guess per label scores about 0.5, 0.7 and 0.8)
  small/    each supported dtype once, for the reader's unit tests
Bad files (bad/): each made by NumPy, then cut or patched where the case is a damaged file:
  truncated.npy, magic.npy, fortran.npy, float64.npy, bigendian.npy, lying.npy (header claims fewer rows
  than the data holds), y99.npy (99 rows against x's 100), negative.npy (a label -1), test_y_big.npy (a test
  label the training labels never reach), x100.npy / y100.npy (a good pair), version9.npy
Usage: make_npy_fixtures.py --out DIR
"""
import argparse
import os

import numpy as np


def save(path, arr):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, arr)


def patch(path, old, new):
    data = open(path, "rb").read()
    assert len(old) == len(new) and data.count(old) == 1, (path, old, new)
    open(path, "wb").write(data.replace(old, new))


def regression(out, rng):
    w = rng.normal(size=20).astype(np.float32)
    for split, n in (("train", 512), ("test", 256)):
        x = rng.normal(size=(n, 20)).astype(np.float32)
        y = (x @ w + 0.05 * rng.normal(size=n)).astype(np.float32)
        save(f"{out}/reg/{split}_x.npy", x)
        save(f"{out}/reg/{split}_y.npy", y)


def classes(out, rng):
    protos = rng.integers(0, 256, size=(4, 6, 6))
    for split, n in (("train", 400), ("test", 100)):
        y = rng.integers(0, 4, size=n).astype(np.int64)
        x = np.clip(protos[y] + rng.integers(-30, 31, size=(n, 6, 6)), 0, 255).astype(np.uint8)
        save(f"{out}/cls/{split}_x.npy", x)
        save(f"{out}/cls/{split}_y.npy", y)


def multi_label(out, rng):
    x = rng.normal(size=(300, 12)).astype(np.float16)
    y = (x[:, :3] > 0).astype(np.float32)
    save(f"{out}/multi/train_x.npy", x)
    save(f"{out}/multi/train_y.npy", y)


# Thresholds of inputs 0-2 (standard normal) with P(x > t) of about 0.5, 0.3 and 0.2.
MULTI_THRESHOLDS = (0.0, 0.524, 0.842)


def multi_label_eval(out, rng):
    for split, n in (("train", 2000), ("test", 500)):
        x = rng.normal(size=(n, 12)).astype(np.float16)
        y = (x[:, :3].astype(np.float32) > np.array(MULTI_THRESHOLDS, dtype=np.float32)).astype(np.float32)
        save(f"{out}/multi_eval/{split}_x.npy", x)
        save(f"{out}/multi_eval/{split}_y.npy", y)


def small(out):
    save(f"{out}/small/u8.npy", np.arange(24, dtype=np.uint8).reshape(4, 2, 3))
    save(f"{out}/small/f16.npy", np.array([[0.5, -2.0], [1.0, 3.0]], dtype=np.float16))
    save(f"{out}/small/f32.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
    save(f"{out}/small/i32.npy", np.array([3, 1, 2], dtype=np.int32))
    save(f"{out}/small/i64.npy", np.array([0, 9, 4, 2, 7], dtype=np.int64))
    save(f"{out}/small/vector.npy", np.arange(7, dtype=np.float32))
    save(f"{out}/small/empty.npy", np.zeros((0, 3), dtype=np.float32))
    save(f"{out}/small/scalar.npy", np.float32(1.5))
    # Format 2.0 (a 4-byte header length), as NumPy writes for huge headers.
    with open(f"{out}/small/v2.npy", "wb") as f:
        arr = np.arange(10, dtype=np.float32).reshape(5, 2)
        np.lib.format.write_array(f, arr, version=(2, 0))


def bad(out, rng):
    b = f"{out}/bad"
    x = rng.normal(size=(100, 4)).astype(np.float32)
    save(f"{b}/x100.npy", x)
    save(f"{b}/y100.npy", rng.normal(size=100).astype(np.float32))
    save(f"{b}/truncated.npy", x)
    data = open(f"{b}/truncated.npy", "rb").read()
    open(f"{b}/truncated.npy", "wb").write(data[:-100])
    save(f"{b}/magic.npy", x)
    patch(f"{b}/magic.npy", b"\x93NUMPY", b"\x93NUMPX")
    save(f"{b}/fortran.npy", np.asfortranarray(x))
    save(f"{b}/float64.npy", x.astype(np.float64))
    save(f"{b}/bigendian.npy", x.astype(">f4"))
    save(f"{b}/lying.npy", x)
    patch(f"{b}/lying.npy", b"(100, 4)", b"(50, 4) ")
    save(f"{b}/version9.npy", x)
    patch(f"{b}/version9.npy", b"\x93NUMPY\x01", b"\x93NUMPY\x09")
    save(f"{b}/y99.npy", rng.normal(size=99).astype(np.float32))
    labels = rng.integers(0, 3, size=100).astype(np.int64)
    save(f"{b}/labels.npy", labels)
    neg = labels.copy()
    neg[7] = -1
    save(f"{b}/negative.npy", neg)
    big = labels.copy()
    big[5] = 3 if labels.max() == 2 else labels.max() + 1
    save(f"{b}/test_y_big.npy", big)
    # A directory with test_x.npy but no test_y.npy.
    save(f"{b}/half/train_x.npy", x)
    save(f"{b}/half/train_y.npy", labels)
    save(f"{b}/half/test_x.npy", x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(19)
    regression(a.out, rng)
    classes(a.out, rng)
    multi_label(a.out, rng)
    small(a.out)
    bad(a.out, rng)
    multi_label_eval(a.out, np.random.default_rng(27))  # its own stream: the sets above stay as they were
    print(f"make_npy_fixtures: wrote {a.out} (numpy {np.__version__})")


if __name__ == "__main__":
    main()
