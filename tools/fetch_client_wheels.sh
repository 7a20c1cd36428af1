#!/usr/bin/env bash
# Downloads the client packages the GPU machines lack (Lightning Thunder and
# the few packages it needs beyond torch; py-spy for tools/host_spy.sh) as
# wheels into .whl/, for tools/gpu_check.sh to install there (they have no
# network). Run here,
# where PyPI is reachable; carry .whl to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
# THUNDER_VERSION picks Thunder's (e.g. 0.2.7.dev20260201, a pre-release).
for package in "lightning-thunder==${THUNDER_VERSION:-0.2.6}" looseversion==1.3.0 lightning-utilities \
    optree opt_einsum dill packaging fdm py-spy==0.4.3; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$package"
done
ls .whl
