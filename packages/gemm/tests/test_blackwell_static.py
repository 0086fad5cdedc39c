"""The Blackwell dense GEMM adapters (sm_100a): typed configs, refusal on the H200, the
compile-time cluster count taken from the target, and the sm_100a compile on a CPU.

The default run compiles two of the five (``dense_gemm`` and ``dense_gemm_persistent``, about
3 s each after a one-off DSL import of about 5 s); ``KERNELPLAN_TEST_ALL_KERNELS=1`` compiles
all five. Each compile uses a fresh compile cache. Skipped, with the reason, when the CUTLASS
sources are absent.
"""

from __future__ import annotations

import pytest
from cute_gemm.blackwell_common import (
    BlackwellDynamicGemmConfig,
    BlackwellGemmConfig,
    BlackwellPrefetchGemmConfig,
)

from kernelplan import CuteKernel, ShapeError
from kernelplan import device as devmod
from kernelplan.cli import kernel_main
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
#: one config type per distinct upstream constructor
CONFIG_TYPE = {
    "dense_gemm": BlackwellGemmConfig,
    "dense_gemm_software_pipeline": BlackwellGemmConfig,
    "dense_gemm_persistent": BlackwellGemmConfig,
    "dense_gemm_persistent_prefetch": BlackwellPrefetchGemmConfig,
    "dense_gemm_persistent_dynamic": BlackwellDynamicGemmConfig,
}


def _plan(name):
    return load_plan_class("gemm", name)()


@pytest.mark.parametrize("name", BLACKWELL)
def test_adapter_facts(name):
    p = _plan(name)
    assert p.target_sm == ("sm_100a",)
    assert p.source == f"cute/blackwell/kernel/dense_gemm/{name}.py"
    assert p.workload.name == "gemm" and p.config_type is CONFIG_TYPE[name]
    prob = p.check_problems()[0]
    cfg = p.default_config(prob)
    assert type(cfg) is CONFIG_TYPE[name]
    assert cfg.mma_tiler_mn == (256, 256) and cfg.cluster_mn == (2, 1)
    assert cfg.use_2cta is True and cfg.use_tma_store is True
    assert p.config_type.from_dict(cfg.to_dict()) == cfg  # a record's config rebuilds it
    space = p.autotune_configs(p.problem(m=4096, n=4096, k=4096))
    assert len(space) == 6 and len(set(space)) == 6
    assert all(type(c) is CONFIG_TYPE[name] for c in space)
    assert BlackwellGemmConfig(mma_tiler_mn=(128, 128), cluster_mn=(1, 1), use_2cta=False) in [
        BlackwellGemmConfig(**{k: getattr(c, k) for k in BlackwellGemmConfig.field_names()})
        for c in space
    ]  # the examples' CLI default tile and cluster is among them


def test_upstream_arguments_in_upstream_order():
    """What each constructor receives after ``acc_dtype`` (upstream's positional order)."""
    base = dict(mma_tiler_mn=(128, 64), cluster_mn=(1, 2), use_2cta=False, use_tma_store=True)
    assert BlackwellGemmConfig(**base).upstream_args() == (False, (128, 64), (1, 2), True)
    assert BlackwellPrefetchGemmConfig(**base, prefetch_dist=3).upstream_args() == (
        False,
        (128, 64),
        (1, 2),
        True,
        3,
    )
    dyn = BlackwellDynamicGemmConfig(**base, swizzle_size=2, raster_along="n")
    assert dyn.upstream_args() == (False, (128, 64), (1, 2), True, 2, "n", 1)


@pytest.mark.parametrize(
    ("name", "config", "needle"),
    [
        ("dense_gemm", {"mma_tiler_mn": "64x128"}, "M=64 unsupported with use_2cta=True"),
        (
            "dense_gemm",
            {"mma_tiler_mn": "256,128", "use_2cta": "false", "cluster_mn": "1x1"},
            "M=256 unsupported with use_2cta=False",
        ),
        ("dense_gemm", {"mma_tiler_mn": "128x100"}, "N=100 unsupported"),
        ("dense_gemm", {"cluster_mn": "1x1"}, "even cluster M"),
        ("dense_gemm", {"cluster_mn": "6x1"}, "powers of two"),
        ("dense_gemm", {"cluster_mn": "8x4"}, "at most 16 CTAs"),
        ("dense_gemm", {"use_tma_store": "false"}, "without use_tma_store"),
        ("dense_gemm", {"split_k": "2"}, "unknown config key 'split_k'"),
        ("dense_gemm_persistent_prefetch", {"prefetch_dist": "-1"}, "prefetch_dist must be"),
        ("dense_gemm_persistent_dynamic", {"split_k": "2"}, "split_k > 1 needs use_tma_store"),
        (
            "dense_gemm_persistent_dynamic",
            {"split_k": "2", "use_tma_store": "false", "raster_along": "n"},
            "split_k > 1 needs swizzle_size=1 and raster_along=m",
        ),
        (
            "dense_gemm_persistent_dynamic",
            {"cluster_mn": "8x2", "split_k": "2", "use_tma_store": "false"},
            r"at most 16 CTAs \(times split_k=2\)",
        ),
        ("dense_gemm_persistent_dynamic", {"swizzle_size": "0"}, "swizzle_size must be"),
        ("dense_gemm_persistent_dynamic", {"raster_along": "k"}, "raster_along=k"),
    ],
)
def test_configs_upstream_rejects_are_one_line(name, config, needle):
    """Each rule upstream checks before compiling is refused here first, as one line, both
    from ``--config`` strings and from the problem (the unpredicated epilogue)."""
    p = _plan(name)
    with pytest.raises(ShapeError, match=needle) as e:
        p.config(p.problem(m=1000, n=1112, k=1024), config)
    assert "\n" not in str(e.value)


def test_what_upstream_accepts_is_accepted():
    """The boundaries of the rules, from the accepted side."""
    dyn = _plan("dense_gemm_persistent_dynamic")
    prob = dyn.problem(m=4096, n=4096, k=4096)
    one_cta = {"mma_tiler_mn": "128x128", "cluster_mn": "1x1", "use_2cta": "false"}
    cfg = dyn.config(prob, {**one_cta, "use_tma_store": "false", "split_k": "2"})
    assert cfg.split_k == 2 and cfg.ctas_per_cluster() == 2
    cfg = dyn.config(prob, {"cluster_mn": "8x2"})  # 16 CTAs exactly
    assert cfg.ctas_per_cluster() == 16
    pre = _plan("dense_gemm_persistent_prefetch")
    assert pre.config(prob, {"prefetch_dist": "none"}).prefetch_dist is None
    assert pre.config(prob, {"prefetch_dist": "0"}).prefetch_dist == 0
    # no TMA store is fine where M and N are CTA-tile multiples (256x256 2-CTA: 128x256)
    assert _plan("dense_gemm").config(prob, {"use_tma_store": "false"}).use_tma_store is False


def test_plan_refuses_a_config_the_problem_rules_out_before_loading_anything():
    """A config built directly (not through ``config()``) is still checked against the
    problem by ``plan()``, before the example is loaded or the DSL imported."""
    p = _plan("dense_gemm")
    cfg = BlackwellGemmConfig(use_tma_store=False)
    with pytest.raises(ShapeError, match="CTA tile 128x256 .got 1000x1112."):
        p.plan(p.problem(m=1000, n=1112, k=1024), cfg, p.target())


def test_a_bad_config_is_one_error_line_from_the_kernel_command(capsys):
    from cute_gemm.dense_gemm_persistent_dynamic import BlackwellDenseGemmPersistentDynamic

    argv = ["--prof_type", "static", "--no-record", "--config", "split_k=2"]
    rc = kernel_main(BlackwellDenseGemmPersistentDynamic, argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert err.startswith("error:") and "split_k > 1 needs use_tma_store=false" in err


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


@needs_sources
@pytest.mark.parametrize("name", STATIC_PERSISTENT)
def test_cluster_count_comes_from_the_target_and_is_in_the_compile_key(name):
    """No compile: the planned kernel's compiled-in ``max_active_clusters`` follows the
    target's SM count (148 on a B200 by the table, or ``--sm_count``), counts the CTAs of one
    cluster, and is part of the derived compile key; the extents are not (dynamic layouts)."""
    p = _plan(name)
    prob = p.problem(m=2048, n=2048, k=2048)
    cfg = p.default_config(prob)
    table, forced = p.target(), p.target(sm_count=120)
    assert (table.sm_count, table.sm_count_from) == (148, "table")
    k_table = p.kernel(prob, cfg, table)
    k_forced = p.kernel(prob, cfg, forced)
    assert isinstance(k_table, CuteKernel)
    assert k_table.meta["max_active_clusters"] == 74 and k_table.const_values() == (74,)
    assert k_forced.meta["max_active_clusters"] == 60
    assert k_forced.meta["max_active_clusters_from"] == "120 SMs (--sm_count) / cluster size 2"
    assert k_table.key != k_forced.key
    k_other_shape = p.kernel(p.problem(m=1000, n=1112, k=1024), cfg, table)
    assert k_other_shape.key == k_table.key  # one compile serves every M, N, K, L
    quad = p.kernel(prob, p.config(prob, {"cluster_mn": "2x2"}), table)
    assert quad.meta["max_active_clusters"] == 37 and quad.key != k_table.key


@needs_sources
def test_non_persistent_kernels_compile_in_no_cluster_count():
    for name in ("dense_gemm", "dense_gemm_persistent_dynamic"):
        p = _plan(name)
        prob = p.problem(m=2048, n=2048, k=2048)
        k = p.kernel(prob, p.default_config(prob), p.target())
        assert k.const_values() == () and "max_active_clusters" not in k.meta


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
