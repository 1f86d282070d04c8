"""Builds the `hetrain` package: the allocation core (src/hetrain/alloc, plain
C++) compiled into one pybind11 extension, hetrain._core, linked with no
libtorch. Offline, from Debian's packages (pybind11-dev, libfmt-dev):

    /usr/bin/python3 -m pip install --no-build-isolation --no-deps --break-system-packages ./python
"""
import glob
import os

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.relpath(os.path.join(HERE, "..", "src"), HERE)

# Every source of the allocation core (a glob: alloc/ may gain files), and
# the torch-free placement discovery the C++ trainer uses.
SOURCES = (["src/module.cc"] + sorted(glob.glob(os.path.join(SRC, "hetrain", "alloc", "*.cc")))
           + [os.path.join(SRC, "hetrain", "train", "placement.cc")])

setup(
    name="hetrain",
    version="0.1.0",
    description="hetrain's allocation core and uneven per-rank batches for PyTorch DDP",
    packages=["hetrain", "hetrain.torch"],
    ext_modules=[Pybind11Extension("hetrain._core", SOURCES, include_dirs=[SRC], libraries=["fmt"],
                                   cxx_std=20, extra_compile_args=["-O2"])],
    cmdclass={"build_ext": build_ext},
    python_requires=">=3.8",
)
