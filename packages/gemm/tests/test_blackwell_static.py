"""The Blackwell dense GEMM adapters (sm_100a): configs, refusal on the H200, and the sm_100a
compile on a CPU.

The default run compiles two of the five (``dense_gemm`` and ``dense_gemm_persistent``, about
3 s each after a one-off DSL import of about 5 s); ``KERNELPLAN_TEST_ALL_KERNELS=1`` compiles
all five. Each compile uses a fresh compile cache. Skipped, with the reason, when the CUTLASS
sources are absent.
"""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan import device as devmod
from kernelplan.registry import load_plan_class
from kernelplan.testing import compile_params, needs_sources

BLACKWELL = [
    "dense_gemm",
    "dense_gemm_software_pipeline",
    "dense_gemm_persistent",
    "dense_gemm_persistent_prefetch",
    "dense_gemm_persistent_dynamic",
]
DEFAULT_COMPILED = ("dense_gemm", "dense_gemm_persistent")
STATIC_PERSISTENT = ("dense_gemm_persistent", "dense_gemm_persistent_prefetch")


def _plan(name):
    return load_plan_class("gemm", name)()


@pytest.mark.parametrize("name", BLACKWELL)
def test_adapter_facts(name):
    p = _plan(name)
    assert p.target_sm == ("sm_100a",)
    assert p.source == f"cute/blackwell/kernel/dense_gemm/{name}.py"
    cfg = p.default_config(p.check_problems()[0])
    assert cfg["mma_tiler_mn"] == [256, 256] and cfg["cluster_mn"] == [2, 1]
    assert cfg["use_2cta"] is True and cfg["use_tma_store"] is True
    for c in p._autotune_configs(p.check_problems()[0]):
        p.validate_config(p.problem(4096, 4096, 4096), c)


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"mma_tiler_mn": [64, 128], "use_2cta": True}, "M=64 unsupported with use_2cta=True"),
        ({"mma_tiler_mn": [256, 128], "use_2cta": False, "cluster_mn": [1, 1]}, "M=256"),
        ({"mma_tiler_mn": [128, 100]}, "N=100 unsupported"),
        ({"cluster_mn": [1, 1]}, "even cluster M"),
        ({"cluster_mn": [6, 1]}, "powers of two"),
        ({"cluster_mn": [8, 4]}, "at most 16 CTAs"),
        ({"use_tma_store": False}, "without use_tma_store"),
    ],
)
def test_configs_upstream_rejects_are_one_line(config, needle):
    p = _plan("dense_gemm")
    with pytest.raises(ShapeError, match=needle) as e:
        p.validate_config(p.problem(1000, 1112, 1024), config)
    assert "\n" not in str(e.value)


def test_refused_on_the_h200_with_one_line():
    h200 = devmod.DeviceInfo(
        name="NVIDIA H200", sm="sm_90", sm_count=132, memory_bytes=141 << 30, l2_bytes=60 << 20
    )
    for name in BLACKWELL:
        p = _plan(name)
        with pytest.raises(devmod.ArchMismatch) as e:
            devmod.require_runs_on(p.name, p.target_sm, h200)
        msg = str(e.value)
        assert "\n" not in msg and "sm_100a" in msg and "NVIDIA H200 (sm_90)" in msg


def _compile_params():
    return compile_params(BLACKWELL, DEFAULT_COMPILED)


@needs_sources
@pytest.mark.parametrize("name", _compile_params())
def test_compiles_for_sm100a_on_the_cpu(name, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    p = _plan(name)
    prob = p.check_problems()[0]
    st = p.run_static(prob, p.default_config(prob))
    assert st["arch"] == "sm_100a" and st["cache"]["hit"] is False
    assert 24 <= st["registers"] <= 64  # fp16, 256x256 2-CTA tile: 39-41 at the pinned commit
    assert st["res_usage_check"]["match"] is True
    assert st["categories"]["mma"] > 0 and any(o.startswith("UTC") for o in st["opcodes"])
    assert st["categories"]["tmem"] > 0 and st["categories"]["tma"] > 0
    assert st["dynamic_smem_bytes"] > 150_000
    if name in STATIC_PERSISTENT:  # 148 SMs (B200) / cluster of 2, compiled in
        assert st["max_active_clusters"] == 74 and st["sm_count"] == 148
    else:
        assert st["max_active_clusters"] is None
