#!/usr/bin/env bash
# Installs what hetrain needs from Debian's packages, only where something is missing.
# Usage: scripts/setup.sh [--peer] [--test] [--python]
#   --peer  also installs python3-torch for the benchmarks
#   --python  also installs the Python package hetrain (python/, docs/pytorch.md) into /usr/bin/python3 with
#           pip, offline (--no-build-isolation --no-deps): pybind11, setuptools and torch come from Debian
#   --test  also installs what only the tests need: Chromium (the headless render test of `hetrain report`),
#           python3-torch (a TorchScript model exported from Python, trained with --model file.pt),
#           python3-numpy (the .npy test files and examples/npy_regression.py),
#           iproute2 (network namespaces), clang with libFuzzer (scripts/fuzz.sh), clang-tidy with
#           libc++ (scripts/lint.sh; .clang-tidy says why libc++), and the real launchers the tests run:
#           Open MPI's mpirun, Slurm with munge (a one-node cluster, tests/cli/launchers_test.py)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libgloo-dev dataset-fashion-mnist zlib1g-dev
  libopenblas0-openmp  # an optimised BLAS for libtorch; the default is the slow reference one
  libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev
  libtomlplusplus-dev  # the simulator's cluster files (hetrain sim, hetrain plan)
  libglpk-dev          # the multi-job planner's LP solver (hetrain plan --jobs; HETRAIN_WITH_GLPK)
  pybind11-dev python3-dev  # the Python package's extension, built with the rest (HETRAIN_PYTHON)
)
python_package=0
for arg in "$@"; do
  case "$arg" in
    --peer) packages+=(python3-torch python3-numpy) ;;
    --python) packages+=(python3-pip python3-setuptools python3-wheel python3-pybind11 libfmt-dev
                         python3-torch python3-torchvision python3-numpy)  # torchvision, numpy: the example
              python_package=1 ;;
    --test) packages+=(chromium python3 python3-torch  # the report render test, the TorchScript test
                       python3-numpy                   # .npy files for the npy tests and example
                       iproute2                        # the network-namespace tests (tests/cli/netns_*.sh)
                       clang libclang-rt-14-dev        # libFuzzer (scripts/fuzz.sh)
                       clang-tidy libc++-14-dev libc++abi-14-dev  # scripts/lint.sh
                       openmpi-bin slurm-wlm munge                # tests/cli/launchers_test.py
                       python3-torchvision                        # tests/python/example_test.py
                       python3-venv python3-pip python3-setuptools python3-wheel python3-pybind11) ;;  # install_test.py
    *) echo "setup: unknown option $arg (use --peer, --test, --python)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The Python package, after the packages it builds with (the system Python is externally managed: PEP 668).
install_python_package() {
  ((python_package)) || return 0
  echo "setup: installing the hetrain Python package into /usr/bin/python3"
  "${sudo_cmd[@]}" /usr/bin/python3 -m pip install -q --no-build-isolation --no-deps --break-system-packages \
    "$(cd "$(dirname "$0")/.." && pwd)/python"
}

sudo_cmd=()
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then sudo_cmd=(sudo); fi
if ((${#missing[@]} == 0)); then
  echo "setup: all packages present"
  install_python_package
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]] && ((${#sudo_cmd[@]} == 0)); then
  echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_python_package
