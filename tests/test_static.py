"""kernelplan.static / kernelplan.sass: compile on the CPU for sm_90a and sm_80, read the cubin.

The kernels below are written here (an elementwise add and an SMEM reversal), small on
purpose: each compile takes well under a second.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from pathlib import Path

import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_compact_tensor

from kernelplan import static
from kernelplan.errors import KernelPlanError
from kernelplan.sass import OTHER, SASS_CATEGORIES, categorize, local_access_bytes, parse_sass

N = 4096
THREADS = 128
REVERSE_ELEMS = 256  # float32 -> 1024 bytes of shared memory


@cute.kernel
def add_kernel(g_a: cute.Tensor, g_b: cute.Tensor, g_c: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(g_a):
        g_c[i] = g_a[i] + g_b[i]


@cute.kernel
def reverse_kernel(g_in: cute.Tensor, g_out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    allocator = cutlass.memory.SmemAllocator()
    buf = allocator.allocate_tensor(
        cutlass.Float32, cute.make_layout(REVERSE_ELEMS), byte_alignment=16
    )
    buf[tidx] = g_in[tidx]
    buf[tidx + THREADS] = g_in[tidx + THREADS]
    cute.arch.sync_threads()
    g_out[tidx] = buf[REVERSE_ELEMS - 1 - tidx]


@cute.jit
def add_then_reverse(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    add_kernel(a, b, c).launch(grid=(cute.size(a) // THREADS, 1, 1), block=(THREADS, 1, 1))
    reverse_kernel(c, a).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))


def _fake_args():
    return tuple(make_fake_compact_tensor(cutlass.Float32, (N,)) for _ in range(3))


def _kernel(artifacts: static.CompiledArtifacts, prefix: str) -> str:
    (name,) = [k for k in artifacts.kernels if k.startswith(f"kernel_cutlass_{prefix}")]
    return name


@pytest.fixture(scope="module", params=["sm_90a", "sm_80"])
def artifacts(request, tmp_path_factory) -> static.CompiledArtifacts:
    dump = tmp_path_factory.mktemp(f"dump-{request.param}")
    return static.compile_to_cubin(
        add_then_reverse, _fake_args(), arch=request.param, dump_dir=dump
    )


# --------------------------------------------------------------------------- compile


def test_compile_writes_main_cubin_in_fresh_dir(artifacts):
    assert artifacts.cubin_path.is_file()
    assert artifacts.cubin_path.parent == artifacts.dump_dir
    assert artifacts.cubin_path.name == f"{artifacts.function_name}.{artifacts.arch}.cubin"
    assert "add_then_reverse" in artifacts.function_name
    assert artifacts.other_cubins == ()
    assert artifacts.ptx_path is not None and artifacts.ptx_path.read_text().count(".entry") == 2
    assert artifacts.compile_seconds > 0
    # launch order of the host function
    assert [k.split("_")[2] for k in artifacts.kernels] == ["add", "reverse"]


def test_dynamic_smem_per_launch(artifacts):
    assert artifacts.dynamic_smem_bytes == {
        _kernel(artifacts, "add"): 0,
        _kernel(artifacts, "reverse"): REVERSE_ELEMS * 4,
    }


def test_unknown_arch_is_a_clear_error(tmp_path):
    with pytest.raises(static.UnknownArchError, match=r"'sm_42'.*sm_90a") as info:
        static.compile_to_cubin(add_then_reverse, _fake_args(), arch="sm_42", dump_dir=tmp_path)
    assert isinstance(info.value, KernelPlanError)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- analysis


def _independent_res_usage(cubin: Path) -> dict[str, int]:
    tool = static.find_tool("cuobjdump")
    text = subprocess.run(
        [str(tool), "-res-usage", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    return dict(re.findall(r"Function (\S+):\s*\n\s*REG:(\d+)", text))


def test_registers_match_independent_cuobjdump(artifacts):
    analysis = static.analyze_cubin(artifacts.cubin_path)
    regs = _independent_res_usage(artifacts.cubin_path)
    assert set(analysis) == set(regs) == set(artifacts.kernels)
    for name, facts in analysis.items():
        assert facts["registers"] > 0
        assert facts["registers"] == int(regs[name])
        # ptxas' own -v line, captured during the compile, agrees
        assert artifacts.ptxas[name]["registers"] == facts["registers"]
        assert artifacts.ptxas[name]["spill_store_bytes"] == 0


def test_histogram_and_categories(artifacts):
    analysis = static.analyze_cubin(artifacts.cubin_path)
    add = analysis[_kernel(artifacts, "add")]
    rev = analysis[_kernel(artifacts, "reverse")]
    assert add["opcodes"].get("LDG", 0) >= 2 and add["opcodes"].get("STG", 0) >= 1
    assert add["opcodes"].get("FADD", 0) >= 1
    assert add["categories"]["ldg_stg"] >= 3 and add["categories"]["fp32"] >= 1
    assert rev["opcodes"].get("STS", 0) >= 1 and rev["opcodes"].get("LDS", 0) >= 1
    assert rev["categories"]["bar"] >= 1 and rev["categories"]["lds_sts"] >= 2
    for facts in (add, rev):
        assert list(facts["categories"]) == [*SASS_CATEGORIES, OTHER]
        assert sum(facts["categories"].values()) == sum(facts["opcodes"].values())
        assert facts["instructions"] == sum(facts["opcodes"].values())
        for category, total in facts["categories"].items():
            assert total == sum(
                n for op, n in facts["opcodes"].items() if categorize(op) == category
            )
        assert "NOP" not in facts["opcodes"]  # alignment padding is dropped
        assert facts["categories"]["mma"] == 0 and facts["mma_mnemonics"] == {}
        assert facts["cubin_bytes"] == artifacts.cubin_path.stat().st_size
        assert facts["arch"] == artifacts.arch
        assert facts["stack_bytes"] == 0 and facts["spill_store_bytes"] == 0


def test_nvdisasm_agrees_with_cuobjdump(artifacts):
    by_cuobjdump = static.analyze_cubin(artifacts.cubin_path)
    by_nvdisasm = static.analyze_cubin(artifacts.cubin_path, sass_tool="nvdisasm")
    assert {k: v["opcodes"] for k, v in by_nvdisasm.items()} == {
        k: v["opcodes"] for k, v in by_cuobjdump.items()
    }


def _dsl_state():
    from cutlass.cutlass_dsl import CuTeDSL

    envar = CuTeDSL._get_dsl().envar
    attrs = ("_arch", "dump_dir", "keep_tokens", "keep_ptx", "keep_cubin", "keep_ir_clean")
    env = ("CUTE_DSL_ARCH", "CUTE_DSL_KEEP", "CUTE_DSL_DUMP_DIR")
    return {a: getattr(envar, a) for a in attrs}, {k: os.environ.get(k) for k in env}


def test_ptxas_info_does_not_change_the_code_and_settings_are_restored(tmp_path):
    before = _dsl_state()
    a = static.compile_to_cubin(add_then_reverse, _fake_args(), arch="sm_90a", dump_dir=tmp_path)
    b = static.compile_to_cubin(
        add_then_reverse, _fake_args(), arch="sm_90a", dump_dir=tmp_path, ptxas_info=False
    )
    assert _dsl_state() == before
    assert a.dump_dir != b.dump_dir
    assert a.ptxas and b.ptxas == {}
    sa, sb = static.analyze_cubin(a.cubin_path), static.analyze_cubin(b.cubin_path)
    assert {k: v["opcodes"] for k, v in sa.items()} == {k: v["opcodes"] for k, v in sb.items()}


def test_reports_and_table(artifacts):
    reports = static.static_reports(artifacts)
    assert [r.kernel for r in reports] == list(artifacts.kernels)
    for r in reports:
        d = json.loads(json.dumps(r.to_dict()))
        assert d["kernel"] == r.kernel and d["arch"] == artifacts.arch
        assert d["registers"] > 0 and d["spill_source"] == "ptxas"
        assert d["dynamic_smem_bytes"] == artifacts.dynamic_smem_bytes[r.kernel]
    # main kernel: most MMA instructions first, then most instructions
    add, rev = reports
    assert static.main_report(reports) is max(reports, key=lambda r: r.instructions)
    mma_add = dataclasses.replace(add, categories={**add.categories, "mma": 1})
    assert static.main_report([rev, mma_add]) is mma_add
    with pytest.raises(static.StaticAnalysisError):
        static.main_report([])
    table = static.format_table(reports)
    lines = table.strip().splitlines()
    assert lines[0].startswith("| kernel | arch | regs |") and lines[1].startswith("|---|")
    assert len(lines) == 2 + len(reports)
    assert f"| {artifacts.arch} | {reports[0].registers} |" in lines[2]
    assert lines[3].count("|") == lines[0].count("|")


# --------------------------------------------------------------------------- tools


def test_missing_tool_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(static, "_wheel_tool_dirs", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(static.ToolMissingError, match="pip install nvidia-cuda-cuobjdump"):
        static.find_tool("cuobjdump")
    with pytest.raises(static.ToolMissingError, match="nvidia-cuda-nvdisasm") as info:
        static.find_tool("nvdisasm")
    assert isinstance(info.value, KernelPlanError)
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF")
    with pytest.raises(static.ToolMissingError):
        static.analyze_cubin(cubin)


def test_tool_found_in_wheel_or_path():
    path = static.find_tool("cuobjdump")
    assert path.name == "cuobjdump" and os.access(path, os.X_OK)


# --------------------------------------------------------------------------- parsers

# Written by hand in the format cuobjdump 13.x prints (-res-usage, then -sass).
RES_USAGE_SAMPLE = """
Resource usage:
 Common:
  GLOBAL:0
 Function kernel_gemm_0:
  REG:154 STACK:16 SHARED:1024 LOCAL:8 CONSTANT[0]:961 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function kernel_tail_1:
  REG:10 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:368 TEXTURE:0 SURFACE:0 SAMPLER:0
"""

SASS_SAMPLE = """
\tcode for sm_90a
\t.target\tsm_90a

\t\tFunction : kernel_gemm_0
\t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                   /* 0x00000a00ff017b82 */
        /*0010*/                   SYNCS.EXCH.64 URZ, [UR16], UR4 ;         /* 0x00000004103f75b2 */
        /*0020*/                   UTMALDG.2D [UR8], [UR14] ;               /* 0x00000008080075b4 */
        /*0030*/                   WARPGROUP.ARRIVE ;                       /* 0x00000000000079cd */
        /*0040*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ ;
        /*0050*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8], R24 ;
        /*0060*/               @P0 SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR16], R3 ;
        /*0070*/                   STL.64 [R1], R24 ;                       /* 0x0000001801007387 */
        /*0080*/                   STL [R1+0x8], R26 ;                      /* 0x0000081a01007387 */
        /*0090*/                   LDL.128 R24, [R1] ;                      /* 0x0000000001187983 */
        /*00a0*/              @!P1 BRA 0x40 ;                               /* 0xffffff9000009947 */
        /*00b0*/                   F2FP.F16.F32.PACK_AB R5, R25, R24 ;      /* 0x000000181905723e */
        /*00c0*/                   STSM.16.M88.4 [R2], R4 ;                 /* 0x000000040200783e */
        /*00d0*/                   MYSTERYOP R0 ;                           /* 0x0000000000007fff */
        /*00e0*/                   EXIT ;                                   /* 0x000000000000794d */
        /*00f0*/                   BRA 0xf0;                                /* 0xfffffffc00fc7947 */
        /*0100*/                   NOP;                                     /* 0x0000000000007918 */
        /*0110*/                   NOP;                                     /* 0x0000000000007918 */
\t\t..........


\t\tFunction : kernel_tail_1
\t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDG.E R2, desc[UR6][R2.64] ;             /* 0x0000000602027981 */
        /*0010*/                   FFMA R2, R2, R2, 1 ;                     /* 0x3f80000002027423 */
        /*0020*/                   STG.E desc[UR6][R4.64], R2 ;             /* 0x0000000204007986 */
        /*0030*/                   EXIT ;                                   /* 0x000000000000794d */
        /*0040*/                   BRA 0x40;                                /* 0xfffffffc00fc7947 */
\t\t..........
"""

# nvdisasm -c prints labels instead of addresses as branch targets.
NVDISASM_SAMPLE = """
\t.target\tsm_80
//--------------------- .text.kernel_tail_1 --------------------------
\t.section\t.text.kernel_tail_1,"ax",@progbits
        .global         kernel_tail_1
kernel_tail_1:
.text.kernel_tail_1:
        /*0000*/                   LDG.E R2, [R2.64] ;
        /*0010*/                   MUFU.EX2 R2, R2 ;
        /*0020*/                   STG.E [R4.64], R2 ;
.L_x_1:
        /*0030*/                   EXIT ;
.L_x_0:
        /*0040*/                   BRA `(.L_x_0);
        /*0050*/                   NOP;
.L_x_2:
"""

PTXAS_SAMPLE = """\x1b[96mremark[ptxas info]:\x1b[0m ptxas output: ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'kernel_gemm_0' for 'sm_90a'
ptxas info    : Function properties for kernel_gemm_0
ptxas         .     16 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 154 registers, used 2 barriers, 961 bytes cmem[0]
ptxas info    : Compile time = 12.5 ms
"""

LAUNCH_CFG = "!llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>"
LLVM_SAMPLE = f"""
  llvm.func @host(%arg0: !llvm.ptr) -> i32 {{
    %5 = llvm.mlir.constant(230400 : i64) : i64
    %18 = llvm.getelementptr %12[0, 2] : (!llvm.ptr) -> !llvm.ptr, {LAUNCH_CFG}
    llvm.store %5, %18 : i64, !llvm.ptr
    %79 = llvm.mlir.addressof @kernels_kernel_gemm_0 : !llvm.ptr
    %81 = llvm.call @_cudaLaunchKernelEx(%69, %80, %72) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %90 = llvm.getelementptr %84[0, 2] : (!llvm.ptr) -> !llvm.ptr, {LAUNCH_CFG}
    llvm.store %arg7, %90 : i64, !llvm.ptr
    %91 = llvm.mlir.addressof @kernels_kernel_tail_1 : !llvm.ptr
    %93 = llvm.call @_cudaLaunchKernelEx(%69, %92, %72) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  }}
"""


def test_parse_res_usage_sample():
    usage = static.parse_res_usage(RES_USAGE_SAMPLE)
    assert usage["kernel_gemm_0"] == {
        "REG": 154,
        "STACK": 16,
        "SHARED": 1024,
        "LOCAL": 8,
        "CONSTANT[0]": 961,
        "TEXTURE": 0,
        "SURFACE": 0,
        "SAMPLER": 0,
    }
    assert usage["kernel_tail_1"]["REG"] == 10
    with pytest.raises(ValueError):
        static.parse_res_usage("Resource usage:\n Common:\n  GLOBAL:0\n")


def test_parse_sass_sample():
    funcs = parse_sass(SASS_SAMPLE)
    assert set(funcs) == {"kernel_gemm_0", "kernel_tail_1"}
    gemm, tail = funcs["kernel_gemm_0"], funcs["kernel_tail_1"]
    assert gemm.arch == "sm_90a"
    assert dict(gemm.opcodes) == {
        "LDC": 1,
        "SYNCS": 2,
        "UTMALDG": 1,
        "WARPGROUP": 1,
        "HGMMA": 2,
        "STL": 2,
        "LDL": 1,
        "BRA": 1,  # the predicated loop branch; the final self-branch is padding
        "F2FP": 1,
        "STSM": 1,
        "MYSTERYOP": 1,
        "EXIT": 1,
    }
    assert gemm.padding == 3
    assert gemm.mnemonics == {"HGMMA.64x128x16.F32": 2}
    assert (gemm.local_store_bytes, gemm.local_load_bytes) == (8 + 4, 16)
    cats = gemm.categories
    assert cats["mma"] == 2 and cats["tma"] == 1 and cats["mbarrier"] == 2
    assert cats["bar"] == 1 and cats["ldsm_stsm"] == 1 and cats["local"] == 3
    assert cats["conversion"] == 1 and cats["control"] == 2 and cats[OTHER] == 1
    assert sum(cats.values()) == gemm.instructions == 15
    assert dict(tail.opcodes) == {"LDG": 1, "FFMA": 1, "STG": 1, "EXIT": 1}
    assert tail.categories["ldg_stg"] == 2 and tail.categories["fp32"] == 1
    with pytest.raises(ValueError):
        parse_sass("\tcode for sm_90a\n")


def test_parse_nvdisasm_sample():
    (tail,) = parse_sass(NVDISASM_SAMPLE).values()
    assert tail.name == "kernel_tail_1" and tail.arch == "sm_80"
    assert dict(tail.opcodes) == {"LDG": 1, "MUFU": 1, "STG": 1, "EXIT": 1}
    assert tail.padding == 2 and tail.categories["mufu"] == 1


def test_categorize_table():
    expected = {
        "HGMMA": "mma",
        "QGMMA": "mma",
        "HMMA.16816.F32": "mma",
        "UTCHMMA": "mma",
        "UTCQMMA": "mma",
        "UTMALDG": "tma",
        "UBLKCP": "tma",
        "LDTM": "tmem",
        "UTCBAR": "tmem",
        "SYNCS": "mbarrier",
        "BAR": "bar",
        "LDGSTS": "ldgsts",
        "LDSM": "ldsm_stsm",
        "LDS": "lds_sts",
        "STG": "ldg_stg",
        "STL": "local",
        "FFMA": "fp32",
        "MUFU": "mufu",
        "F2FP": "conversion",
        "IMAD": "integer",
        "UIADD3": "uniform",
        "BRA": "control",
        "NOSUCHOP": OTHER,
    }
    assert {op: categorize(op) for op in expected} == expected
    assert [local_access_bytes(m) for m in ("STL", "STL.64", "LDL.128", "LDL.U8")] == [4, 8, 16, 1]


def test_parse_ptxas_log_sample():
    assert static.parse_ptxas_log(PTXAS_SAMPLE) == {
        "kernel_gemm_0": {
            "stack_frame_bytes": 16,
            "spill_store_bytes": 24,
            "spill_load_bytes": 16,
            "registers": 154,
            "barriers": 2,
            "cmem0_bytes": 961,
        }
    }


def test_dynamic_smem_from_llvm_sample():
    smem = static.dynamic_smem_from_llvm_ir(LLVM_SAMPLE, ["kernel_gemm_0", "kernel_tail_1"])
    # the second launch stores a runtime value (%arg7): unknown at compile time
    assert smem == {"kernel_gemm_0": 230400, "kernel_tail_1": None}


def test_static_table_lists_the_other_kernels_of_a_module():
    """A static result whose module holds a second kernel (a split-KV combine) gets a row for
    it, named after the DSL function inside its mangled symbol, with its own registers and
    instructions; a symbol that is not the DSL's keeps its name."""
    from kernelplan.tables import function_label, static_table

    common = {
        "arch": "sm_90a", "spill_store_bytes": 0, "spill_load_bytes": 0, "spill_source": "ptxas",
        "stack_bytes": 0, "local_bytes": 0, "static_smem_bytes": 1024, "dynamic_smem_bytes": 0,
        "cubin_bytes": 73968, "opcodes": {},
    }  # fmt: skip
    base = {**common, "registers": 220, "instructions": 3280, "categories": {"mma": 48}}
    combine = {
        **common,
        "kernel": "kernel_cutlass_combine_cute_mlamla_decode_sm90seesaw_object_at__x_1",
        "registers": 126,
        "instructions": 525,
        "categories": {"ldg_stg": 48},
    }
    text = static_table([{**base, "kernel": "k", "label": "mla/x", "functions": [combine]}])
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [r.split("|")[1].strip() for r in rows] == ["`mla/x`", "`mla/x / combine`"]
    assert "| 126 |" in rows[1] and "| 525 |" in rows[1] and "| 3280 |" in rows[0]
    assert function_label("mla/x", "my_ptx_kernel") == "mla/x / my_ptx_kernel"
    one = static_table([{**base, "kernel": "k", "label": "mla/x", "functions": []}])
    assert len([line for line in one.splitlines() if line.startswith("| `")]) == 1
