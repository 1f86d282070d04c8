#!/usr/bin/env bash
# Sets up, builds, and runs the main job: a short heterogeneous training demo
# on Fashion-MNIST, 4 workers, one of them emulated 4x slower, one epoch of
# the cnn with a global batch of 256 under each allocation policy. Writes the
# metrics and a per-worker timeline of each run, and one HTML report comparing
# them, to runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --python
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETRAIN_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target hetrain
mkdir -p runs
# --eval-every: test accuracy every 50 steps too, for the report's curves against wall-clock time.
./build/hetrain run -n 4 --model cnn -b 256 --epochs 1 --speeds 1,1,1,0.25 --policy equal --eval-every 50 \
  --metrics runs/demo-equal.json --trace runs/demo-equal.trace.json "$@"
./build/hetrain run -n 4 --model cnn -b 256 --epochs 1 --speeds 1,1,1,0.25 --policy static --shares 4,4,4,1 \
  --eval-every 50 --metrics runs/demo-static.json --trace runs/demo-static.trace.json "$@"
./build/hetrain run -n 4 --model cnn -b 256 --epochs 1 --speeds 1,1,1,0.25 --policy adaptive --eval-every 50 \
  --metrics runs/demo-adaptive.json --trace runs/demo-adaptive.trace.json "$@"
python3 - <<'PY'
import json
for name in ("equal", "static", "adaptive"):
    d = json.load(open(f"runs/demo-{name}.json"))
    w = d["workers"]
    print(f"{name:>6}: wall {d['wall_seconds']:.1f} s, balance efficiency {d['balance_efficiency']:.2f}, "
          f"test accuracy {d['epochs'][-1]['test_accuracy']:.4f}, "
          "wait/compute per worker " + " ".join(f"{x['wait_seconds']/max(x['compute_seconds'],1e-9):.1f}" for x in w))
PY
./build/hetrain report runs/demo-equal.json runs/demo-static.json runs/demo-adaptive.json -o runs/report.html
echo "timelines: runs/demo-{equal,static,adaptive}.trace.json (open in https://ui.perfetto.dev or chrome://tracing)"
