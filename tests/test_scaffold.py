"""kernelplan.scaffold (``nox -s new``): scaffold into a temporary copy of the workspace.

Each test copies ``pyproject.toml``, ``noxfile.py``, ``shared/`` and ``packages/gemm`` into
``tmp_path`` and scaffolds there; the real tree is never written. The generated code is linted,
imported, checked to raise a named TODO for every value it could not derive, and (filled in by
hand) compiled for its SM on the CPU.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelplan import ShapeError
from kernelplan import scaffold as S
from kernelplan.cutlass_src import examples_dir
from kernelplan.testing import needs_sources

REPO = Path(__file__).resolve().parents[1]
HOPPER = "cute/hopper/kernel/dense_gemm/dense_gemm.py"
FP8 = "cute/hopper/kernel/dense_gemm/dense_gemm_fp8_2xacc.py"
FMHA = "cute/hopper/kernel/attention/fmha.py"
GROUPED = "cute/hopper/kernel/grouped_gemm/grouped_gemm.py"
AMPERE_ADD = "cute/ampere/kernel/elementwise/elementwise_add.py"


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("pyproject.toml", "noxfile.py"):
        shutil.copy(REPO / name, ws / name)
    ignore = shutil.ignore_patterns("__pycache__", ".cache")
    shutil.copytree(REPO / "shared", ws / "shared", ignore=ignore)
    shutil.copytree(REPO / "packages" / "gemm", ws / "packages" / "gemm", ignore=ignore)
    before = {n: m for n, m in sys.modules.items() if n.startswith("cute_")}
    yield ws
    # drop the workspace copies and put the installed modules back, so that later tests see
    # the same classes their own imports hold
    for name in [n for n in sys.modules if n.startswith("cute_")]:
        del sys.modules[name]
    sys.modules.update(before)


def _scaffold(ws: Path, capsys, *args: str) -> tuple[int, str, str]:
    rc = S.main([*args, "--root", str(ws), "--no-lock", "--no-catalog"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _tree(ws: Path) -> dict[str, bytes]:
    return {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _import(ws: Path, monkeypatch, package: str, kernel: str):
    monkeypatch.syspath_prepend(str(ws / "packages" / package / "src"))
    for name in [n for n in sys.modules if n.startswith(S.module_name(package))]:
        del sys.modules[name]  # the workspace copy, not the installed package
    __import__(S.module_name(package))
    pkg = sys.modules[S.module_name(package)]
    modpath, _, cls = pkg.KERNELS[kernel].partition(":")
    mod = __import__(modpath, fromlist=[cls])
    return pkg, getattr(mod, cls)


def _todo_names(text: str) -> list[str]:
    return sorted(set(re.findall(r"TODO\((\w+)\)", text)))


# --------------------------------------------------------------------------- existing package


@needs_sources
def test_into_gemm_uses_the_workload_and_derives_configs(workspace, capsys, monkeypatch):
    rc, out, err = _scaffold(workspace, capsys, "gemm", "fp8_2xacc", "--from", FP8)
    assert rc == 0, err
    kdir = workspace / "packages/gemm/src/cute_gemm/fp8_2xacc"
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(kdir)],
        cwd=workspace, capture_output=True, text=True,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stdout
    pkg, cls = _import(workspace, monkeypatch, "gemm", "fp8_2xacc")
    from cute_gemm.common import GemmPlan

    from kernelplan.workloads.gemm import GEMM

    assert issubclass(cls, GemmPlan) and cls.workload is GEMM  # the package's workload
    assert cls.target_sm == ("sm_90a",)
    config = cls.config_type()
    # defaults traced through run() to argparse; raster_order reaches raster_along_m
    assert config.to_dict() == {
        "tile_shape_mn": [128, 128],
        "cluster_shape_mn": [1, 2],
        "swizzle_size": 1,
        "raster_along_m": True,
        "mma_promotion_interval": 4,
    }
    assert "--raster_order default 'along_m'" in (kdir / "fp8_2xacc.py").read_text()
    # flags that reach no entry argument are said, not offered
    assert "not offered --scale_a" in out and "not offered --mnkl" in out
    # what it cannot derive: named TODOs, each one line when run
    assert _todo_names(out) == ["reference", "supports", "tensor_specs"]
    plan = cls()
    with pytest.raises(NotImplementedError, match=r"^TODO\(supports\): "):
        plan.problem(dtype="float16")
    with pytest.raises(NotImplementedError, match=r"^TODO\(tensor_specs\): .* a, b, c; .* a, b, d"):
        plan.tensor_specs(GEMM.problem())
    # the generated test, __main__ and KERNELS entry
    text = (kdir / "__main__.py").read_text()
    assert "sys.exit(kernel_main(Fp82xacc))" in text
    assert pkg.KERNELS["fp8_2xacc"] == "cute_gemm.fp8_2xacc.fp8_2xacc:Fp82xacc"
    assert "hopper_dense_gemm" in pkg.KERNELS  # the other rows kept


@needs_sources
def test_enum_default_is_the_member_not_a_string(workspace, capsys, monkeypatch):
    # upstream compiles through an alias (`_compiler = cute.compile`): the entry is named
    args = ("gemm", "grouped", "--from", GROUPED, "--entry", "HopperGroupedGemmPersistentKernel")
    rc, out, err = _scaffold(workspace, capsys, *args)
    assert rc == 0, err
    text = (workspace / "packages/gemm/src/cute_gemm/grouped/grouped.py").read_text()
    # the enum-typed value is upstream's member (by name in the config), never the bare string
    assert 'tensormap_update_mode: str = "SMEM"' in text
    assert "mod.utils.TensorMapUpdateMode[config.tensormap_update_mode]" in text
    # what the signature gives no value for is a named TODO
    assert "TODO(acc_dtype)" in out and "TODO(tile_shape_mn)" in out


@needs_sources
def test_filled_fp8_adapter_compiles_statically(workspace, capsys, monkeypatch):
    """The acceptance trial, as a test: 11 hand-written lines."""
    assert _scaffold(workspace, capsys, "gemm", "fp8_2xacc", "--from", FP8)[0] == 0
    path = workspace / "packages/gemm/src/cute_gemm/fp8_2xacc/fp8_2xacc.py"
    _replace_method(path, "supports", FP8_HEAD)
    _replace_method(path, "tensor_specs", FP8_SPECS)
    _replace_method(path, "reference", FP8_REF)
    _, cls = _import(workspace, monkeypatch, "gemm", "fp8_2xacc")
    plan = cls()
    problem = plan.check_problems()[0]
    report = plan.run_static(problem, plan.default_config(problem), use_cache=False)
    assert report["arch"] == "sm_90a" and report["registers"] > 0


FP8_HEAD = """
    dtypes: ClassVar[tuple[str, ...]] = ("float8_e4m3fn",)

    def check_problems(self):
        from kernelplan.workloads.gemm import GemmProblem

        return [GemmProblem(2048, 2048, 2048, dtype="float8_e4m3fn", c_dtype="float16")]
"""
FP8_SPECS = """
    def tensor_specs(self, problem):
        s = super().tensor_specs(problem)
        one = TensorSpec((1,), "float32", init="uniform", leading_dim=0)
        return {"a": s["a"], "b": s["b"], "d": s["c"], "scale_a": one, "scale_b": one}
"""
FP8_REF = """
    def reference(self, problem, inputs):
        c = super().reference(problem, inputs)["c"]
        return {"d": c * inputs["scale_a"].float() * inputs["scale_b"].float()}
"""


def _replace_method(path: Path, name: str, code: str) -> None:
    text = path.read_text()
    lines = text.splitlines()
    node = next(
        n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name
    )
    new = textwrap.indent(textwrap.dedent(code).strip("\n"), " " * node.col_offset)
    lines[node.lineno - 1 : node.end_lineno] = new.splitlines()
    path.write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- a new package


@needs_sources
def test_new_package_gets_a_workload_stub_and_todos_for_computed_values(
    workspace, capsys, monkeypatch
):
    rc, out, err = _scaffold(workspace, capsys, "attention", "fmha", "--from", FMHA)
    assert rc == 0, err
    pkg_dir = workspace / "packages/attention"
    src = pkg_dir / "src/cute_attention"
    for rel in ("pyproject.toml", "src/cute_attention/workload.py", "tests/test_fmha.py"):
        assert (pkg_dir / rel).is_file(), rel
    assert (workspace / "knowledge/kernels/fmha.md").is_file()
    root = S._toml_loads((workspace / "pyproject.toml").read_text())
    assert root["tool"]["uv"]["sources"]["cute-attention"] == {"workspace": True}
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(pkg_dir)],
        cwd=workspace, capture_output=True, text=True,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stdout
    _, cls = _import(workspace, monkeypatch, "attention", "fmha")
    # the target SM from the instructions (helpers/fmha_helpers.py read too)
    assert cls.target_sm == ("sm_90a",)
    # values run() computes are named TODOs citing upstream's lines, never silent defaults
    assert _todo_names(out) == sorted(
        [
            "supports", "mma_tiler", "mask_type", "scale_softmax_log2", "scale_softmax",
            "scale_output", "window_size_left", "window_size_right", "tensor_specs",
            "reference", "flops_bytes",
        ]
    )  # fmt: skip
    line = _upstream_line(FMHA, "scale_softmax = scale_q * scale_k * scale_softmax")
    assert f"L{line} `scale_softmax = scale_q * scale_k * scale_softmax`" in out
    assert "member of `fmha_utils.MaskEnum`" in out
    # the example's flags that no argument takes are the problem; tunables are the config
    wl = sys.modules["cute_attention.workload"].WORKLOAD
    problem = wl.problem()
    assert problem.q_shape == (1, 128, 16, 128) and problem.in_dtype == "float16"
    assert set(cls.config_type.field_names()) == {
        "qk_acc_dtype", "pv_acc_dtype", "is_persistent", "mma_tile_shape_mn"
    }  # fmt: skip
    with pytest.raises(ShapeError, match=r"--q_shape takes positive integers .*0"):
        wl.problem(q_shape=(1, 0, 16, 128))
    with pytest.raises(NotImplementedError, match=r"^TODO\(tensor_specs\): .*q, k, v, o, lse"):
        wl.tensor_specs(problem)
    # the generated test skips naming the first open TODO
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         str(pkg_dir / "tests/test_fmha.py")],
        cwd=workspace, capture_output=True, text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(pkg_dir / "src")},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 1 skipped" in run.stdout and "unfinished: TODO(supports)" in run.stdout
    assert "cute_attention" in (src / "__init__.py").read_text()


def _upstream_line(relpath: str, code: str) -> int:
    lines = (examples_dir() / relpath).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.strip() == code)


# --------------------------------------------------------------------------- the target SM


@needs_sources
@pytest.mark.parametrize(
    ("relpath", "sm", "evidence"),
    [
        (HOPPER, "sm_90a", "warpgroup"),
        (FP8, "sm_90a", "warpgroup"),
        ("cute/blackwell/kernel/dense_gemm/dense_gemm.py", "sm_100a", "tcgen05"),
        (
            "cute/blackwell/kernel/blockscaled_gemm/sm103_dense_blockscaled_gemm_persistent.py",
            "sm_103a",
            "sm_103",
        ),
        ("cute/blackwell_geforce/kernel/dense_gemm/dense_gemm.py", "sm_120a", "blackwell_geforce"),
        ("cute/ampere/kernel/dense_gemm/tensorop_gemm.py", "sm_80", "warp.Mma"),
        (AMPERE_ADD, "sm_80", "no tensor-core"),
    ],
)
def test_derived_sm(relpath, sm, evidence):
    ex = S.analyze_example(examples_dir() / relpath, relpath, root=examples_dir())
    assert ex.sm == sm
    assert evidence in ex.sm_why + " " + " ".join(ex.evidence)


@needs_sources
def test_sm_counts_local_imports(tmp_path):
    """An example whose tcgen05 code is in a module beside it is built for sm_100a."""
    root = tmp_path / "CuTeDSL"
    (root / "cute/blackwell/x").mkdir(parents=True)
    (root / "cute/blackwell/x/common_x.py").write_text(
        "import cutlass.cute.nvgpu.tcgen05 as tcgen05\nop = tcgen05.MmaF16BF16Op\n"
    )
    (root / "cute/blackwell/x/ex.py").write_text(
        "import cutlass.cute as cute\nfrom common_x import op\n\n"
        "@cute.jit\ndef host(a):\n    pass\n\nif __name__ == '__main__':\n    host(1)\n"
    )
    sm, _, evidence, _ = S.derive_sm(
        root / "cute/blackwell/x/ex.py", "cute/blackwell/x/ex.py", root
    )
    assert sm == "sm_100a" and "common_x.py" in " ".join(evidence)


# --------------------------------------------------------------------------- refusals


@needs_sources
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["demo", "k", "--from", "cute/hopper/no_such_example.py"], "unknown example path"),
        (["demo", "k", "--from", "../../etc/passwd.py"], "unknown example path"),
        (["demo", "k", "--from", "cute/hopper/kernel/dense_gemm"], "unknown example path"),
        (
            ["demo", "k", "--from", "cute/blackwell/kernel/attention/mla/mla_helpers.py"],
            "helper library",
        ),
        (["Demo_Pkg", "k", "--from", HOPPER], "bad package name"),
        (["demo", "class", "--from", HOPPER], "bad kernel name"),
        (["demo", "1gemm", "--from", HOPPER], "bad kernel name"),
        (["demo", "common", "--from", HOPPER], "bad kernel name"),
        (["gemm", "hopper_dense_gemm", "--from", HOPPER], "already exists"),
    ],
)
def test_refuses_with_one_line_and_writes_nothing(workspace, capsys, args, needle):
    before = _tree(workspace)
    rc, out, err = _scaffold(workspace, capsys, *args)
    assert rc == 2
    assert err.startswith("error: ") and err.strip().count("\n") == 0 and needle in err
    assert _tree(workspace) == before


@needs_sources
def test_package_without_a_workload_is_refused(workspace, capsys):
    legacy = workspace / "packages/legacy"
    (legacy / "src/cute_legacy").mkdir(parents=True)
    (legacy / "pyproject.toml").write_text('[project]\nname = "cute-legacy"\n')
    (legacy / "src/cute_legacy/__init__.py").write_text('PACKAGE = "legacy"\nKERNELS = {}\n')
    before = _tree(workspace)
    rc, _, err = _scaffold(workspace, capsys, "legacy", "k", "--from", HOPPER)
    assert rc == 2 and "no implementation with a `workload` attribute" in err
    assert _tree(workspace) == before


def test_module_entry_point_exits_non_zero(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "kernelplan.scaffold", "demo", "k", "--from", "x.py",
         "--root", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and r.stderr.strip().count("\n") == 0


# --------------------------------------------------------------------------- file edits


def test_kernel_entry_added_after_parenthesised_last_row():
    text = textwrap.dedent(
        """\
        PACKAGE = "gemm"

        KERNELS = {
            "a": "cute_gemm.a.a:A",
            "long": (
                "cute_gemm.long.long"
                ":Long"  # the last row has no comma
            )
        }
        """
    )
    out = S.add_kernel_entry(text, "b", "cute_gemm.b.b:B")
    table = ast.literal_eval(out.split("KERNELS = ", 1)[1])
    assert table == {
        "a": "cute_gemm.a.a:A",
        "long": "cute_gemm.long.long:Long",
        "b": "cute_gemm.b.b:B",
    }
    with pytest.raises(S.ScaffoldError, match="already"):
        S.add_kernel_entry(out, "a", "x:y")
    assert (
        S.add_kernel_entry("KERNELS = {}\n", "k", "m.k.k:K")
        == 'KERNELS = {\n    "k": "m.k.k:K",\n}\n'
    )


def test_root_registration_keeps_other_text():
    text = textwrap.dedent(
        """\
        [project]
        name = "x"
        dependencies = [
            "kernelplan",  # the core
            "cute-gemm"
        ]

        [tool.uv.sources]
        kernelplan = { workspace = true }
        # packages
        cute-gemm = { workspace = true }
        """
    )
    out = S.register_in_root(text, "cute-new")
    data = S._toml_loads(out)
    if data is None:
        pytest.skip("no TOML reader")
    assert data["project"]["dependencies"] == ["kernelplan", "cute-gemm", "cute-new"]
    assert data["tool"]["uv"]["sources"]["cute-new"] == {"workspace": True}
    assert "# the core" in out and "# packages" in out
    assert S.register_in_root(out, "cute-new") == out


def test_devlog_path_never_reuses_another_kernels(tmp_path):
    kernels = tmp_path / "knowledge" / "kernels"
    kernels.mkdir(parents=True)
    mine = "packages/b/src/cute_b/foo/"

    def devlog(name: str, imported: str) -> Path:
        p = kernels / name
        p.write_text(f"# x\n\n## Source\nOriginal: `x.py`\nImported: `{imported}`\n")
        return p

    assert S.devlog_path(tmp_path, "b", "foo", mine) == (kernels / "foo.md", None, [])
    other = devlog("foo.md", "packages/a/src/cute_a/foo/")
    assert S.devlog_path(tmp_path, "b", "foo", mine) == (kernels / "b-foo.md", None, [other])
    own = devlog("b-foo.md", mine.rstrip("/"))
    assert S.devlog_path(tmp_path, "b", "foo", mine) == (own, own, [other])


# --------------------------------------------------------------------------- entry via imports

EFC = "cute/blackwell/efc/activation_custom_epilogue_dense_gemm.py"


@needs_sources
@pytest.mark.parametrize("entry", ["DenseGemmActivation", "DenseGemmEFC"])
def test_entry_found_through_the_examples_imports(workspace, capsys, monkeypatch, entry):
    """The example's class inherits its @cute.jit __call__ from DenseGemmEFC, which it imports
    from common_dense_gemm_efc.py beside it: --entry names either."""
    rc, out, err = _scaffold(workspace, capsys, "gemm", "efc", "--from", EFC, "--entry", entry)
    assert rc == 0, err
    assert f"entry       class {entry}" in out
    if entry == "DenseGemmEFC":
        assert "defined in cute/blackwell/efc/common_dense_gemm_efc.py" in out
    text = (workspace / "packages/gemm/src/cute_gemm/efc/efc.py").read_text()
    assert f"kernel = mod.{entry}(" in text and "STREAM" in text and 't["a"], t["b"]' in text
    _, cls = _import(workspace, monkeypatch, "gemm", "efc")
    assert cls.target_sm == ("sm_100a",)  # tcgen05 in the imported module
    # without --entry: the class is named, not "no entry point"
    rc, _, err = _scaffold(workspace, capsys, "gemm", "efc2", "--from", EFC)
    assert rc == 2 and "DenseGemmActivation): pick one with --entry NAME" in err


# --------------------------------------------------------------------------- ruff-clean output


@needs_sources
def test_long_names_and_paths_stay_within_the_line_length(workspace, capsys):
    """Docstrings, comments and literals are wrapped: ruff (E501 included) passes with the
    longest names the scaffold takes and a 123-character example path."""
    long_path = (
        "experimental/task_scheduling/blackwell/tutorial/"
        "03_persistent_scheduling_dynamic_domain_ts/02_copy_varlen_dynamic_domain.py"
    )
    package, kernel = "abcdefghij-klmnopqrst-uvwxyz12", "k" * 20 + "_" + "x" * 19
    for args in ([package, kernel, "--from", long_path], ["gemm", kernel, "--from", FP8]):
        rc, _, err = _scaffold(workspace, capsys, *args)
        assert rc == 0, err
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "packages"],
        cwd=workspace, capture_output=True, text=True,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stdout
