"""kernelplan.scaffold (``nox -s new``): scaffold into a temporary copy of a minimal workspace.

Each test copies ``pyproject.toml``, ``noxfile.py`` and ``shared/`` into ``tmp_path`` with an
empty ``packages/`` and scaffolds there; the real tree is never written. The generated code is
linted with ruff, imported, and, once its TODO bodies are filled in, compiled on the CPU.
"""

from __future__ import annotations

import ast
import difflib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelplan import ShapeError
from kernelplan import scaffold as S
from kernelplan.cli import build_parser, run_kernel_cli
from kernelplan.cutlass_src import examples_dir

from .conftest import needs_sources

REPO = Path(__file__).resolve().parents[1]

HOPPER = "cute/hopper/kernel/dense_gemm/dense_gemm.py"
BLACKWELL = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_0.py"
AMPERE_ADD = "cute/ampere/kernel/elementwise/elementwise_add.py"
HOPPER_FMHA = "cute/hopper/kernel/attention/fmha.py"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A minimal workspace copy; generated ``cute_*`` modules are forgotten afterwards."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("pyproject.toml", "noxfile.py"):
        shutil.copy(REPO / name, ws / name)
    shutil.copytree(
        REPO / "shared", ws / "shared", ignore=shutil.ignore_patterns("__pycache__", ".cache")
    )
    (ws / "packages").mkdir()
    before = set(sys.modules)
    yield ws
    for name in set(sys.modules) - before:
        if name.startswith("cute_") and not name.startswith("cute_gemm"):
            del sys.modules[name]


def _toml(text: str) -> dict:
    data = S._toml_loads(text)
    if data is None:  # Python 3.10 without tomli
        pytest.skip("no TOML reader (tomllib or tomli)")
    return data


def _scaffold(ws: Path, capsys, *args: str) -> tuple[int, str, str]:
    rc = S.main([*args, "--root", str(ws), "--no-lock", "--no-catalog", "--no-format"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _tree(ws: Path) -> dict[str, bytes]:
    return {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _ruff(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ws,
        capture_output=True,
        text=True,
    )


def _import_plan(ws: Path, monkeypatch, package: str, kernel: str):
    module = S.module_name(package)
    monkeypatch.syspath_prepend(str(ws / "packages" / package / "src"))
    pkg = __import__(module)
    target = pkg.KERNELS[kernel]
    modpath, _, cls = target.partition(":")
    mod = __import__(modpath, fromlist=[cls])
    return pkg, getattr(mod, cls)


# --------------------------------------------------------------------------- a new package


@needs_sources
def test_new_package_files_registration_lint_and_import(workspace, capsys, monkeypatch):
    ws = workspace
    root_before = (ws / "pyproject.toml").read_text()
    rc, out, err = _scaffold(ws, capsys, "demo-pkg", "hopper_gemm", "--from", HOPPER)
    assert rc == 0, err
    assert "sm_90a" in out and "HopperWgmmaGemmKernel" in out

    pkg = ws / "packages" / "demo-pkg"
    src = pkg / "src" / "cute_demo_pkg"
    kdir = src / "hopper_gemm"
    for rel in (
        pkg / "pyproject.toml",
        src / "__init__.py",
        src / "__main__.py",
        kdir / "__init__.py",
        kdir / "__main__.py",
        kdir / "hopper_gemm.py",
        pkg / "tests" / "test_hopper_gemm.py",
        ws / "knowledge" / "kernels" / "hopper-gemm.md",
    ):
        assert rel.is_file(), rel

    # the package's pyproject: distribution, console script, entry point, workspace source
    meta = _toml((pkg / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "cute-demo-pkg"
    assert meta["project"]["dependencies"] == ["kernelplan"]
    assert meta["project"]["scripts"] == {"demo-pkg": "cute_demo_pkg.__main__:main"}
    assert meta["project"]["entry-points"]["kernelplan.packages"] == {"demo-pkg": "cute_demo_pkg"}
    assert meta["tool"]["uv"]["sources"]["kernelplan"] == {"workspace": True}

    # the root pyproject: only lines added or extended, the new member registered
    root_after = (ws / "pyproject.toml").read_text()
    root = _toml(root_after)
    assert root["tool"]["uv"]["sources"]["cute-demo-pkg"] == {"workspace": True}
    assert "cute-demo-pkg" in root["project"]["dependencies"]
    removed = [
        ln
        for ln in difflib.ndiff(root_before.splitlines(), root_after.splitlines())
        if ln.startswith("- ")
    ]
    assert len(removed) == 1 and removed[0].startswith("- dependencies = [")
    assert len(root_after.splitlines()) == len(root_before.splitlines()) + 1

    # the generated Python passes the project's ruff rules, raw (the formatter was off)
    py = sorted(str(p.relative_to(ws)) for p in pkg.rglob("*.py"))
    lint = _ruff(ws, "check", "--no-cache", *py)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _ruff(ws, "format", "--check", "--no-cache", *py)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr

    # the plan class imports, is registered, and carries what was derived
    mod, cls = _import_plan(ws, monkeypatch, "demo-pkg", "hopper_gemm")
    assert mod.PACKAGE == "demo-pkg"
    assert mod.KERNELS == {"hopper_gemm": "cute_demo_pkg.hopper_gemm.hopper_gemm:HopperGemm"}
    assert cls.__name__ == "HopperGemm"
    assert cls.name == "hopper_gemm" and cls.package == "demo-pkg"
    assert cls.source == HOPPER
    assert cls.target_sm == ("sm_90a",)
    plan = cls()
    problem = plan.problem_from_args(build_parser(plan).parse_args([]))
    assert problem["mnkl"] == [4096, 4096, 4096, 1]
    assert problem["a_dtype"] == "Float16" and problem["c_major"] == "n"
    assert plan.default_config(problem) == {
        "acc_dtype": "Float32",
        "tile_shape_mn": [128, 128],
        "cluster_shape_mn": [1, 1],
    }
    assert plan.check_problems() == [problem]
    # problem sizes (the integer flags) are validated; the generated test says how to get sources
    plan.validate(problem)
    with pytest.raises(ShapeError, match=r"--mnkl takes positive integers.*\[4096, 0, 4096, 1\]"):
        plan.validate({**problem, "mnkl": [4096, 0, 4096, 1]})
    assert "(or set CUTLASS_DIR)" in (pkg / "tests" / "test_hopper_gemm.py").read_text()
    # what a person must write is not pretended: each raises, saying so
    assert S.unfinished(cls) == ["tensor_specs", "reference_fn", "_algorithmic_flops_bytes"]
    for call in (
        lambda: plan.tensor_specs(problem),
        lambda: plan.reference_fn(problem, {}),
        lambda: plan._algorithmic_flops_bytes(problem),
        lambda: plan.plan(problem, plan.default_config(problem)),
    ):
        with pytest.raises(NotImplementedError, match=r"TODO\(scaffold\)"):
            call()
    text = (kdir / "hopper_gemm.py").read_text()
    assert "# Target SM, derived by the scaffold" in text and "warpgroup" in text
    assert 'source: ClassVar[str] = "cute/hopper/kernel/dense_gemm/dense_gemm.py"' in text

    # the devlog stub has the request's sections and resolvable Source lines
    devlog = (ws / "knowledge" / "kernels" / "hopper-gemm.md").read_text()
    for section in ("Overview", "Source", "Performance", "Patterns Extracted", "Insights"):
        assert f"\n## {section}\n" in devlog
    assert f"Original: `{HOPPER}`" in devlog
    imported = devlog.split("Imported: `")[1].split("`")[0]
    assert (ws / imported).is_dir()

    # nox finds check-demo-pkg by itself (the noxfile lists packages/*)
    nox = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ws / "noxfile.py"), "-l"],
        cwd=ws,
        capture_output=True,
        text=True,
    )
    assert nox.returncode == 0, nox.stderr
    assert "check-demo-pkg" in nox.stdout and "new" in nox.stdout

    # the generated test: registered passes; the compile test skips, saying why
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            str(pkg / "tests" / "test_hopper_gemm.py"),
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(pkg / "src")},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 1 skipped" in run.stdout
    assert "scaffold TODOs still open in tensor_specs" in run.stdout


@needs_sources
def test_second_kernel_extends_the_package_and_derives_blackwell(workspace, capsys, monkeypatch):
    ws = workspace
    assert _scaffold(ws, capsys, "demo-two", "hopper_gemm", "--from", HOPPER)[0] == 0
    root_after_first = (ws / "pyproject.toml").read_text()
    rc, out, err = _scaffold(ws, capsys, "demo-two", "fp16_gemm_0", "--from", BLACKWELL)
    assert rc == 0, err
    assert (ws / "pyproject.toml").read_text() == root_after_first  # registered once
    assert "edited      packages/demo-two/src/cute_demo_two/__init__.py" in out
    init = ws / "packages" / "demo-two" / "src" / "cute_demo_two" / "__init__.py"
    lint = _ruff(ws, "check", "--no-cache", str(init))
    assert lint.returncode == 0, lint.stdout
    mod, cls = _import_plan(ws, monkeypatch, "demo-two", "fp16_gemm_0")
    assert list(mod.KERNELS) == ["hopper_gemm", "fp16_gemm_0"]
    assert cls.target_sm == ("sm_100a",)
    text = Path(sys.modules[cls.__module__].__file__).read_text()
    assert "tcgen05" in text.split("target_sm:")[0].rsplit("# Target SM", 1)[1]
    # the tutorial calls host_function directly; the adapter compiles it instead
    assert "mod.host_function" in text


# --------------------------------------------------------------------------- the target SM


@needs_sources
@pytest.mark.parametrize(
    ("relpath", "sm", "evidence"),
    [
        (HOPPER, "sm_90a", "warpgroup"),
        ("cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py", "sm_90a", "warpgroup"),
        ("cute/blackwell/kernel/dense_gemm/dense_gemm.py", "sm_100a", "tcgen05"),
        (BLACKWELL, "sm_100a", "tcgen05"),
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
    ex = S.analyze_example(examples_dir() / relpath, relpath)
    assert ex.sm == sm
    said = ex.sm_family + " " + " ".join(name for name, _ in ex.evidence)
    assert evidence in said


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
    ],
)
def test_refuses_with_one_line_and_writes_nothing(workspace, capsys, args, needle):
    before = _tree(workspace)
    rc, out, err = _scaffold(workspace, capsys, *args)
    assert rc == 2
    assert err.startswith("error: ") and err.strip().count("\n") == 0 and needle in err
    assert _tree(workspace) == before


@needs_sources
def test_existing_kernel_is_never_overwritten(workspace, capsys):
    assert _scaffold(workspace, capsys, "demo", "k1", "--from", AMPERE_ADD)[0] == 0
    adapter = workspace / "packages/demo/src/cute_demo/k1/k1.py"
    adapter.write_text(adapter.read_text() + "# edited by hand\n")
    before = _tree(workspace)
    rc, _, err = _scaffold(workspace, capsys, "demo", "k1", "--from", HOPPER)
    assert rc == 2 and "already exists" in err and "never overwritten" in err
    assert _tree(workspace) == before


def test_module_entry_point_exits_non_zero(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelplan.scaffold",
            "demo",
            "k",
            "--from",
            "x.py",
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
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
    one = S.add_kernel_entry("KERNELS = {}\n", "k", "m.k.k:K")
    assert one == 'KERNELS = {\n    "k": "m.k.k:K",\n}\n'


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

        [tool.ruff]
        line-length = 100
        """
    )
    out = S.register_in_root(text, "cute-new")
    data = _toml(out)
    assert data["project"]["dependencies"] == ["kernelplan", "cute-gemm", "cute-new"]
    assert data["tool"]["uv"]["sources"]["cute-new"] == {"workspace": True}
    assert data["tool"]["ruff"] == {"line-length": 100}
    assert "# the core" in out and "# packages" in out
    assert S.register_in_root(out, "cute-new") == out  # idempotent


# --------------------------------------------------------------------------- fill the reference

ELEMENTWISE_FILL = {
    "tensor_specs": """
        m, n = problem["M"], problem["N"]
        return {
            "mA": TensorSpec((m, n), "float32", leading_dim=1),
            "mB": TensorSpec((m, n), "float32", leading_dim=1),
            "mC": TensorSpec((m, n), "float32", leading_dim=1, role="output", init="empty"),
        }
    """,
    "reference_fn": 'return {"mC": inputs["mA"].float() + inputs["mB"].float()}',
    "_algorithmic_flops_bytes": 'return float(problem["M"] * problem["N"]), '
    '12.0 * problem["M"] * problem["N"]',
}

HOPPER_FILL = {
    "tensor_specs": """
        from kernelplan.scaffold import torch_dtype

        m, n, k, l = problem["mnkl"]
        ab, c = torch_dtype(problem["a_dtype"]), torch_dtype(problem["c_dtype"])
        return {
            "a": TensorSpec((l, m, k), ab, perm=(1, 2, 0), leading_dim=1),
            "b": TensorSpec((l, n, k), ab, perm=(1, 2, 0), leading_dim=1),
            "c": TensorSpec(
                (l, m, n), c, perm=(1, 2, 0), leading_dim=1, role="output", init="empty"
            ),
        }
    """,
    "reference_fn": """
        import torch

        a, b = inputs["a"].float(), inputs["b"].float()
        return {"c": torch.bmm(a, b.transpose(1, 2))}
    """,
    "_algorithmic_flops_bytes": """
        m, n, k, l = problem["mnkl"]
        return 2.0 * m * n * k * l, 2.0 * l * (m * k + n * k + m * n)
    """,
}


def _fill(path: Path, bodies: dict[str, str]) -> None:
    """Replace each named method's body (after its docstring) with real code, as a user does."""
    text = path.read_text()
    lines = text.splitlines()
    edits = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name in bodies:
            doc = node.body[0]
            has_doc = isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
            start = doc.end_lineno if has_doc else node.lineno
            edits.append((start, node.end_lineno, node.col_offset + 4, bodies[node.name]))
    assert len(edits) == len(bodies)
    for start, end, indent, code in sorted(edits, reverse=True):
        body = textwrap.indent(textwrap.dedent(code).strip("\n"), " " * indent)
        lines[start:end] = body.splitlines()
    path.write_text("\n".join(lines) + "\n")


@needs_sources
@pytest.mark.parametrize(
    ("kernel", "relpath", "bodies", "sm"),
    [
        ("ew_add", AMPERE_ADD, ELEMENTWISE_FILL, "sm_80"),
        ("wgmma_gemm", HOPPER, HOPPER_FILL, "sm_90a"),
    ],
)
def test_filled_reference_compiles_statically(
    workspace, capsys, monkeypatch, kernel, relpath, bodies, sm
):
    package = "filled-" + kernel.replace("_", "-")
    rc, _, err = _scaffold(workspace, capsys, package, kernel, "--from", relpath)
    assert rc == 0, err
    module = S.module_name(package)
    _fill(workspace / "packages" / package / "src" / module / kernel / f"{kernel}.py", bodies)
    _, cls = _import_plan(workspace, monkeypatch, package, kernel)
    assert S.unfinished(cls) == []
    plan = cls()
    problem = plan.check_problems()[0]
    flops, nbytes = plan._algorithmic_flops_bytes(problem)
    assert flops > 0 and nbytes > 0
    report = plan.run_static(problem, plan.default_config(problem))
    assert report["arch"] == sm
    assert report["registers"] and report["registers"] > 0
    assert report["cubin_bytes"] > 0
    assert report["label"] == f"{package}/{kernel}"


@needs_sources
@pytest.mark.parametrize("size", ["0", "-4"])
def test_filled_adapter_refuses_non_positive_sizes(workspace, capsys, monkeypatch, size):
    rc, _, err = _scaffold(workspace, capsys, "sizes", "ew_add", "--from", AMPERE_ADD)
    assert rc == 0, err
    path = workspace / "packages/sizes/src/cute_sizes/ew_add/ew_add.py"
    text = path.read_text()
    assert 'SIZES: dict[str, str] = {\n    "M": "--M",\n    "N": "--N",\n}' in text
    assert "Add the kernel's own constraints here" in text and "divisibility" in text
    _fill(path, ELEMENTWISE_FILL)
    _, cls = _import_plan(workspace, monkeypatch, "sizes", "ew_add")
    assert S.unfinished(cls) == []
    plan = cls()
    plan.validate(plan.check_problems()[0])  # the example's defaults pass
    rc = run_kernel_cli(plan, ["--prof_type", "static", "--no-record", "--M", size])
    out = capsys.readouterr()
    assert rc == 2
    assert out.err.startswith("error: ") and out.err.strip().count("\n") == 0, out.err
    assert f"ew_add: --M takes positive integers (a problem size), got {size}" in out.err
    assert out.out == ""


# --------------------------------------------------------------------------- values run() computes


def _upstream_line(relpath: str, code: str) -> int:
    lines = (examples_dir() / relpath).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.strip() == code)


@needs_sources
def test_values_upstream_computes_are_listed_and_cited(workspace, capsys, monkeypatch):
    ws = workspace
    rc, out, err = _scaffold(ws, capsys, "attn", "fmha", "--from", HOPPER_FMHA)
    assert rc == 0, err
    kdir = ws / "packages/attn/src/cute_attn/fmha"
    _, cls = _import_plan(ws, monkeypatch, "attn", "fmha")
    unset = [
        "mma_tiler",
        "mask_type",
        "scale_softmax_log2",
        "scale_softmax",
        "scale_output",
        "window_size_left",
        "window_size_right",
    ]
    methods = ["tensor_specs", "reference_fn", "_algorithmic_flops_bytes"]
    assert S.unfinished(cls) == methods + [f'default_config["{k}"]' for k in unset]

    # each cites the lines of upstream's run() that compute it; scale_softmax, which upstream
    # derives from the problem (1/sqrt(...) when 0, times scale_q * scale_k), is not passed raw
    text = (kdir / "fmha.py").read_text()
    comments = {}
    for block in (
        text.split("def default_config", 1)[1]
        .split("# -- what only")[0]
        .split("# TODO(scaffold): ")[1:]
    ):
        note, _, rest = block.partition('\n            "')
        comments[rest.split('"', 1)[0]] = " ".join(note.replace("#", " ").split())
    assert set(comments) == set(unset)
    mirror = "upstream derives this from the problem: mirror its formula ("
    assert all(c.startswith(mirror) and "`run()` L" in c for c in comments.values()), comments
    assert "it passes `window_size_left if window_size_left is None" in comments["window_size_left"]
    zero = _upstream_line(HOPPER_FMHA, "if scale_softmax == 0.0:  # default to 1/sqrt(d)")
    scaled = _upstream_line(HOPPER_FMHA, "scale_softmax = scale_q * scale_k * scale_softmax")
    assert f"L{zero + 1}, L{scaled}:" in comments["scale_softmax"]
    assert "scale_softmax = scale_q * scale_k * scale_softmax" in comments["scale_softmax"]
    tiler = _upstream_line(HOPPER_FMHA, "mma_tiler = (*mma_tiler_mn, d)")
    assert f"L{tiler}: `mma_tiler = (*mma_tiler_mn, d)`" in comments["mma_tiler"]
    assert 'v["scale_softmax"]' in text and "scale_softmax" in text.split("REQUIRED")[1]
    plan = cls()
    problem = plan.check_problems()[0]
    assert problem["window_size"] == [-1, -1]
    plan.validate(problem)  # a -1 default is no size: not refused
    with pytest.raises(NotImplementedError, match=r"needs a value for .*scale_softmax"):
        plan.plan(problem, plan.default_config(problem))
    assert "default_config values: " + ", ".join(unset[:3]) in out

    # filled in (here by hand), a value leaves the list
    filled = {k: 1 for k in unset if k != "mask_type"}
    monkeypatch.setattr(cls, "default_config", lambda self, problem: dict(filled))
    assert S.unfinished(cls) == methods + ['default_config["mask_type"]']

    # the generated test skips, naming every value still to fill
    test = ws / "packages/attn/tests/test_fmha.py"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)],
        cwd=ws,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ws / "packages/attn/src")},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 1 skipped" in run.stdout
    reason = " ".join(run.stdout.split("scaffold TODOs still open in ", 1)[1].split())
    assert 'default_config["scale_softmax"]' in reason and 'default_config["mma_tiler"]' in reason


# --------------------------------------------------------------------------- devlogs


@needs_sources
def test_devlog_of_a_second_kernel_with_the_same_name(workspace, capsys):
    ws = workspace
    kernels = ws / "knowledge" / "kernels"
    rc, out, err = _scaffold(ws, capsys, "elementwise", "foo", "--from", AMPERE_ADD)
    assert rc == 0, err
    assert "devlog      knowledge/kernels/foo.md (new stub)" in out
    first = (kernels / "foo.md").read_text()
    rc, out, err = _scaffold(ws, capsys, "attention", "foo", "--from", HOPPER_FMHA)
    assert rc == 0, err
    assert (kernels / "foo.md").read_text() == first  # the first kernel's, untouched
    assert "devlog      knowledge/kernels/attention-foo.md (new stub)" in out
    assert "knowledge/kernels/foo.md is another kernel's devlog" in out
    second = (kernels / "attention-foo.md").read_text()
    assert second.startswith("# attention/foo ")
    assert "Imported: `packages/attention/src/cute_attention/foo/`" in second
    assert f"Original: `{HOPPER_FMHA}`" in second


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
    also = devlog("b-foo.md", "packages/c/src/cute_c/foo/")
    path, kept, taken = S.devlog_path(tmp_path, "b", "foo", mine)
    assert (path, kept, taken) == (kernels / "b-foo-2.md", None, [other, also])
    own = devlog("b-foo-2.md", mine.rstrip("/"))  # this kernel's own: kept, not duplicated
    assert S.devlog_path(tmp_path, "b", "foo", mine) == (own, own, [other, also])
