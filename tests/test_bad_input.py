"""Bad input ends a command with ONE ``error:`` line that says what to do, a non-zero exit,
and the results folder as it was (issue 8 item 9). On the CPU:

- an adapter with its scaffold TODOs open, in ``analyze`` and ``check`` (each kernel is one
  line, the others go on, exit 1 at the end);
- a results folder that cannot be written, in ``analyze``, ``check`` and ``report`` (refused
  before any work);
- CUTLASS sources at another commit than the pin (one warning per command; the failure that
  follows names the commit);
- a DSL older than the pin, no DSL, or NVIDIA's ``nvidia-cutlass`` in its place (simulated
  through ``importlib.metadata`` and ``sys.modules``, nothing uninstalled);
- an unknown package in ``nox -s check-<package>`` and ``profile``;
- every static result names the DSL, ptxas and cuobjdump versions it came from.

The failing kernels are small subclasses of the in-house axpby plan (no CUTLASS example).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from kernelplan import cutlass_src, errors, report, sessions, static
from kernelplan import device as devmod
from kernelplan.cutlass_src import DSL_REQUIREMENT, PINNED_COMMIT, PINNED_DSL

from .inhouse_axpby import AxpbyPlan, AxpbyProblem

ROOT = Path(__file__).resolve().parents[1]


# -- kernels that fail the ways the trials did ------------------------------------------------
class UnfinishedPlan(AxpbyPlan):
    name = "axpby_unfinished"

    def plan(self, problem, config, target):
        raise NotImplementedError("TODO(plan): call the example's entry point with the tensors")


class UnfinishedSpecs(AxpbyPlan):
    name = "axpby_specs_todo"

    def tensor_specs(self, problem):
        raise NotImplementedError("TODO(tensor_specs): every tensor the entry point takes")


class PeerPlan(AxpbyPlan):
    """Goes on after the others fail (analyze skips it; check cannot run it without a GPU)."""

    name = "axpby_peer"
    target_sm = ()


class UpstreamChanged(AxpbyPlan):
    """What a CUTLASS checkout at another commit did: a TypeError deep in the adapter."""

    name = "axpby_upstream_changed"

    def plan(self, problem, config, target):
        raise TypeError("GemmKernel.__init__() takes 4 positional arguments but 5 were given")


class OldDsl(AxpbyPlan):
    """What DSL 4.4.2 did: an AttributeError where the adapter uses a newer API."""

    name = "axpby_old_dsl"

    def plan(self, problem, config, target):
        raise AttributeError("module 'cutlass.cute' has no attribute 'sym_int64'")


# -- fixtures and helpers ------------------------------------------------------------------
@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """Each test is its own command: warnings not yet given, an empty compile cache, no GPU."""
    monkeypatch.setattr(cutlass_src, "_warned", set())
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "kpcache"))
    monkeypatch.setattr(devmod, "current_device", lambda: None)


def _plans(monkeypatch, *plans):
    monkeypatch.setattr(sessions, "_plans", lambda package, kernel: list(plans))


def _no_work(monkeypatch):
    def refuse(package, kernel):
        raise AssertionError("work started although the input was bad")

    monkeypatch.setattr(sessions, "_plans", refuse)


def _lines(text: str, prefix: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(prefix)]


def _only_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def _records(results_dir: Path) -> list[Path]:
    return sorted(results_dir.rglob("*.json")) if results_dir.exists() else []


def _versions(monkeypatch, table: dict[str, str | None]) -> None:
    """importlib.metadata.version as if ``table`` were installed (None: not installed)."""
    real = importlib.metadata.version

    def version(dist):
        if dist in table:
            if table[dist] is None:
                raise importlib.metadata.PackageNotFoundError(dist)
            return table[dist]
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)


def _no_cutlass_module(monkeypatch) -> None:
    """``import cutlass`` (and every ``cutlass.*``) fails as if nothing provided it."""
    for name in [n for n in sys.modules if n == "cutlass" or n.startswith("cutlass.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "cutlass", None)


def _sources_at(tmp_path, monkeypatch, commit: str = "0123456789abcdef" * 2 + "01234567"):
    """CUTLASS_DIR: an examples tree that says it comes from ``commit``."""
    base = tmp_path / "cutlass-other"
    (base / "examples/python/CuTeDSL/cute").mkdir(parents=True)
    (base / cutlass_src.COMMIT_FILE).write_text(commit + "\n")
    monkeypatch.setenv("CUTLASS_DIR", str(base))
    return base, commit


# -- an unfinished adapter -----------------------------------------------------------------
def test_analyze_unfinished_adapter_is_one_line_per_kernel_and_exit_1(
    monkeypatch, capsys, results_dir
):
    _plans(monkeypatch, UnfinishedPlan(), UnfinishedSpecs(), PeerPlan())
    rc = sessions.main(["analyze", "gemm"])
    out = capsys.readouterr().out
    errs = _lines(out, "error:")
    assert rc == 1
    assert len(errs) == 2, out
    specs, plan = errs  # tensor_specs is found before any compile, plan() when it compiles
    assert plan.startswith(
        "error: axpby_unfinished is not finished: TODO(plan): call the example's entry point "
        "with the tensors (tests/test_bad_input.py:L"
    )
    assert plan.endswith("): fill in what its TODOs ask, or leave it out of the package's KERNELS")
    assert specs.startswith("error: axpby_specs_todo is not finished: TODO(tensor_specs)")
    assert "skip: axpby_peer is a peer" in out  # the others went on
    assert "Traceback" not in out
    assert _records(results_dir) == []


def test_check_unfinished_adapter_is_one_line_and_the_others_go_on(
    monkeypatch, capsys, results_dir
):
    _plans(monkeypatch, UnfinishedPlan(), PeerPlan())
    rc = sessions.main(["check", "gemm"])
    out = capsys.readouterr().out
    errs = _lines(out, "error:")
    assert rc == 1
    assert len(errs) == 1 and errs[0].startswith(
        "error: axpby_unfinished is not finished: TODO(plan)"
    )
    assert "| axpby_peer |" in out and "not run (needs a GPU)" in out
    assert _records(results_dir) == []


def test_unfinished_is_still_a_not_implemented_error():
    """The scaffold's generated tests skip on NotImplementedError: the one-line error is one."""
    with pytest.raises(NotImplementedError, match=r"TODO\(plan\)"):
        UnfinishedPlan().kernel(AxpbyProblem(1000), UnfinishedPlan().default_config(None), None)


# -- a results folder that cannot be written -------------------------------------------------
@pytest.mark.parametrize("cmd", ["analyze", "check", "profile"])
def test_unwritable_results_folder_is_refused_before_any_work(monkeypatch, capsys, tmp_path, cmd):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    _no_work(monkeypatch)
    rc = sessions.main([cmd, "gemm", "--results-dir", str(blocker / "results")])
    captured = capsys.readouterr()
    line = _only_line(captured.err)
    assert rc == 2 and captured.out == ""
    assert line.startswith(f"error: cannot write result records under {blocker / 'results'}: ")
    assert line.endswith(
        "choose another --results-dir (or KERNELPLAN_RESULTS), or pass --no-record"
    )


def test_report_refuses_an_unwritable_folder_before_any_plot(capsys, tmp_path):
    root = tmp_path / "results"
    rec = {"schema": 2, "kind": "benchmark", "package": "gemm", "kernel": "torch_matmul"}
    (root / "gemm/torch-matmul").mkdir(parents=True)
    (root / "gemm/torch-matmul/r.json").write_text(json.dumps(rec))
    blocker = tmp_path / "a-file"
    blocker.write_text("where the report folder would go\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = blocker / "report"
    rc = report.main(["report", "gemm", "--results-dir", str(root), "--out", str(out)])
    line = _only_line(capsys.readouterr().err)
    assert rc == 2
    assert line.startswith(f"error: cannot write the report under {out}: ")
    assert line.endswith("pass --out with a folder you can write")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


# -- CUTLASS sources at another commit ----------------------------------------------------------
def test_sources_at_another_commit_warn_once_and_the_failure_names_the_commit(
    monkeypatch, capsys, tmp_path
):
    base, commit = _sources_at(tmp_path, monkeypatch)
    _plans(monkeypatch, UpstreamChanged(), PeerPlan())
    rc = sessions.main(["analyze", "gemm", "--no-record"])
    captured = capsys.readouterr()
    warns = _lines(captured.err, "warning:")
    errs = _lines(captured.out, "error:")
    assert rc == 1
    assert warns == [
        f"warning: the CUTLASS sources are at {commit[:9]}, the project pins {PINNED_COMMIT[:9]}: "
        f"results may differ from the committed records (git -C {base} checkout "
        f"{PINNED_COMMIT[:9]})"
    ]
    assert errs == [
        "error: axpby_upstream_changed: TypeError: GemmKernel.__init__() takes 4 positional "
        f"arguments but 5 were given (the CUTLASS sources are at {commit[:9]}, the project pins "
        f"{PINNED_COMMIT[:9]}: git -C {base} checkout {PINNED_COMMIT[:9]})"
    ]


def test_the_warning_comes_once_per_command_whether_or_not_anything_compiles(
    monkeypatch, capsys, tmp_path
):
    _sources_at(tmp_path, monkeypatch)
    _plans(monkeypatch)  # nothing to compile: as when every result comes from the cache
    assert sessions.main(["analyze", "gemm", "--no-record"]) == 0
    cutlass_src.check_environment()  # later in the same command: nothing more
    cutlass_src.warn_once(cutlass_src._sources_warning(cutlass_src.sources_drift()))
    assert len(_lines(capsys.readouterr().err, "warning:")) == 1


def test_without_a_known_cause_a_bug_keeps_its_traceback(monkeypatch):
    _plans(monkeypatch, UpstreamChanged())  # sources and DSL at the pins: a bug of ours
    monkeypatch.setattr(cutlass_src, "drift_note", lambda: None)
    with pytest.raises(TypeError):
        sessions.main(["analyze", "gemm", "--no-record"])


# -- the CuTe DSL ---------------------------------------------------------------------------------
def test_an_older_dsl_is_warned_once_and_the_failure_says_what_to_install(monkeypatch, capsys):
    _versions(monkeypatch, {"nvidia-cutlass-dsl": "4.4.2"})
    _plans(monkeypatch, OldDsl())
    rc = sessions.main(["analyze", "gemm", "--no-record"])
    captured = capsys.readouterr()
    req = DSL_REQUIREMENT
    install = f"install {req} (`uv sync` in the checkout, or `pip install '{req}'`)"
    assert rc == 1
    assert _lines(captured.err, "warning:") == [
        f"warning: nvidia-cutlass-dsl 4.4.2 is installed, the project pins {PINNED_DSL}: results "
        f"may differ from the committed records (SASS counts, registers); {install}"
    ]
    assert _lines(captured.out, "error:") == [
        "error: axpby_old_dsl: AttributeError: module 'cutlass.cute' has no attribute "
        f"'sym_int64' (nvidia-cutlass-dsl 4.4.2 is installed, the project pins {PINNED_DSL}: "
        f"{install})"
    ]


@pytest.mark.parametrize(
    "installed, needle",
    [
        (
            {"nvidia-cutlass-dsl": None, "nvidia-cutlass": None},
            "the CuTe DSL is not installed (no nvidia-cutlass-dsl): ",
        ),
        (
            {"nvidia-cutlass-dsl": None, "nvidia-cutlass": "4.2.1"},
            "nvidia-cutlass 4.2.1 is installed, NVIDIA's CUTLASS C++ Python interface, not the "
            "CuTe DSL this project runs: ",
        ),
    ],
    ids=["no-dsl", "nvidia-cutlass-instead"],
)
@pytest.mark.parametrize("cmd", ["analyze", "check", "profile"])
def test_no_dsl_says_which_package_to_install(monkeypatch, capsys, installed, needle, cmd):
    _versions(monkeypatch, installed)
    _no_cutlass_module(monkeypatch)
    _no_work(monkeypatch)
    rc = sessions.main([cmd, "gemm", "--no-record"])
    captured = capsys.readouterr()
    line = _only_line(captured.err)
    assert rc == 2 and captured.out == ""
    assert line == (
        f"error: {needle}install {DSL_REQUIREMENT} (`uv sync` in the checkout, or "
        f"`pip install '{DSL_REQUIREMENT}'`)"
    )


def test_static_analysis_without_the_dsl_is_the_same_line_not_a_module_not_found(monkeypatch):
    """The path the single-kernel ``--prof_type static`` takes (kernelplan.static)."""
    _versions(monkeypatch, {"nvidia-cutlass-dsl": None, "nvidia-cutlass": None})
    _no_cutlass_module(monkeypatch)
    with pytest.raises(errors.DslMissing, match=re.escape(f"install {DSL_REQUIREMENT}")):
        static._normalize_arch("sm_90a")


def test_the_pinned_dsl_is_the_one_the_package_requires():
    text = (ROOT / "shared/kernelplan/pyproject.toml").read_text()
    assert f'"{DSL_REQUIREMENT}"' in text
    assert f"nvidia-cutlass-dsl[cu13]=={PINNED_DSL}" == DSL_REQUIREMENT


def test_the_single_kernel_command_says_the_same(monkeypatch, capsys, tmp_path):
    from kernelplan.cli import run_argv

    rc = run_argv(UnfinishedPlan(), ["--prof_type", "static", "--no-record"])
    line = _only_line(capsys.readouterr().err)
    assert rc == 2 and line.startswith("error: axpby_unfinished is not finished: TODO(plan)")

    base, commit = _sources_at(tmp_path, monkeypatch)
    rc = run_argv(UpstreamChanged(), ["--prof_type", "static", "--no-record"])
    warn, err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2
    assert warn.startswith(f"warning: the CUTLASS sources are at {commit[:9]}")
    assert err.startswith("error: axpby_upstream_changed: TypeError: ")
    pin = PINNED_COMMIT[:9]
    assert err.endswith(
        f"(the CUTLASS sources are at {commit[:9]}, the project pins {pin}: "
        f"git -C {base} checkout {pin})"
    )


def test_an_abbreviated_option_is_one_line_not_a_jsonargparse_deprecation(capsys):
    """Item 10: jsonargparse deprecates abbreviations (v5 drops them); the parser refuses them."""
    from kernelplan.cli import run_argv

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rc = run_argv(AxpbyPlan(), ["--prof_type", "static", "--no-rec"])
    assert rc == 2
    assert _only_line(capsys.readouterr().err) == "error: unrecognized arguments: --no-rec"


def test_zero_check_launches_is_one_line_and_exit_2(capsys):
    """``--check-launches 0`` is refused in one line before anything is built."""
    from kernelplan.cli import run_argv

    rc = run_argv(AxpbyPlan(), ["--check", "--check-launches", "0", "--no-record"])
    assert rc == 2
    assert _only_line(capsys.readouterr().err) == (
        "error: --check-launches 0: give 1 or more launches"
    )


# -- unknown packages -----------------------------------------------------------------------
def test_nox_check_of_an_unknown_package_lists_the_packages():
    proc = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", "check-nosuchpkg"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    errs = _lines(out, "error:")
    assert proc.returncode != 0
    assert len(errs) == 1 and errs[0].startswith("error: unknown package 'nosuchpkg' (known: ")
    assert "gemm" in errs[0] and "Sessions not found" not in out


def test_profile_of_an_unknown_package_says_so_before_asking_for_a_gpu(capsys):
    rc = sessions.main(["profile", "nosuchpkg"])
    line = _only_line(capsys.readouterr().err)
    assert rc == 2
    assert line.startswith("error: unknown package 'nosuchpkg' (known: ") and "GPU" not in line


# -- the tools behind a static result -----------------------------------------------------------
def test_tool_versions_name_the_dsl_its_ptxas_and_cuobjdump():
    tools = static.tool_versions()
    assert tools["nvidia_cutlass_dsl"] == cutlass_src.dsl_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", tools["ptxas"]["version"])
    assert tools["ptxas"]["library"].startswith("_cutlass_ir.cu")  # inside the DSL wheel
    assert re.fullmatch(r"\d+\.\d+\.\d+", tools["cuobjdump"]["version"])


def test_a_static_result_carries_the_tools_and_our_code_warns_nothing():
    """Also item 10: compiling through kernelplan emits no deprecation warning of our own."""
    plan = AxpbyPlan()
    problem = AxpbyProblem(1000)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        st = plan.run_static(problem, plan.default_config(problem), use_cache=False)
    assert st["tools"] == static.tool_versions()
    ours = [
        w
        for w in seen
        if issubclass(w.category, DeprecationWarning)
        and Path(w.filename).resolve().is_relative_to(ROOT)
        and "third_party" not in Path(w.filename).parts
    ]
    assert ours == [], [f"{w.filename}:{w.lineno}: {w.message}" for w in ours]
