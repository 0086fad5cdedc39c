#!/bin/bash
# Step 1 on a GPU host without a package registry (see ../shared/gpu/README.md): keep the first
# half of the DSL wheel and the CuTe DSL example tree outside the work tree.
set -euo pipefail
bash .device/a/stage.sh
mkdir -p /root/stage/cutlass
tar xzf .device/cutlass/cutedsl.tgz -C /root/stage/cutlass
cp .device/cutlass/CUTLASS_COMMIT /root/stage/cutlass/CuTeDSL/
echo "CuTeDSL examples at /root/stage/cutlass/CuTeDSL ($(cat /root/stage/cutlass/CuTeDSL/CUTLASS_COMMIT))"
