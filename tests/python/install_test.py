#!/usr/bin/env python3
"""The package installs offline with one pip command from the repository (issue 28 point 1): a copy of python/
and src/ in --work, pip install --no-build-isolation --no-deps into a venv that sees Debian's torch
(--system-site-packages, so nothing else is touched), then `import hetrain.torch` from another folder."""
import argparse
import os
import shutil
import subprocess

STEP_TIMEOUT = 600  # seconds: the extension compiles the allocation core


def run(cmd, cwd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT, cwd=cwd)
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{(r.stdout + r.stderr)[-3000:]}"
    return r.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    repo, venv = os.path.join(a.work, "repo"), os.path.join(a.work, "venv")
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    for folder in ("python", "src"):
        shutil.copytree(os.path.join(a.root, folder), os.path.join(repo, folder), ignore=ignore)
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], a.work)
    python = os.path.join(venv, "bin", "python")
    run([python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
         os.path.join(repo, "python")], a.work)
    out = run([python, "-c", "import hetrain, hetrain.torch, torch; print(hetrain.__file__); "
               "print(hetrain.make_policy('static', 3, 64, shares=[5, 17, 42]).split())"], "/")
    assert out.splitlines()[0].startswith(venv) and out.splitlines()[1] == "[5, 17, 42]", out
    print(out.strip())
    print("install: passed")


if __name__ == "__main__":
    main()
