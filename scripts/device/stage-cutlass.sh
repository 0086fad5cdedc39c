#!/bin/bash
# Pack the pinned CuTe DSL example tree for a GPU host that has no git submodule:
#   bash scripts/device/stage-cutlass.sh          -> .device/cutlass/{cutedsl.tgz,CUTLASS_COMMIT}
# On the host: tar xzf .device/cutlass/cutedsl.tgz -C <dir>; cp .device/cutlass/CUTLASS_COMMIT <dir>/CuTeDSL/
# then export CUTLASS_DIR=<dir>/CuTeDSL (kernelplan.cutlass_src reads CUTLASS_COMMIT there).
set -euo pipefail
root="$(git rev-parse --show-toplevel)"
cd "$root"
src=third_party/cutlass/examples/python
[ -d "$src/CuTeDSL" ] || { echo "no $src/CuTeDSL: git submodule update --init third_party/cutlass" >&2; exit 2; }
mkdir -p .device/cutlass
tar czf .device/cutlass/cutedsl.tgz --exclude='*.ipynb' --exclude='*.png' -C "$src" CuTeDSL
git -C third_party/cutlass rev-parse HEAD > .device/cutlass/CUTLASS_COMMIT
du -sh .device/cutlass
