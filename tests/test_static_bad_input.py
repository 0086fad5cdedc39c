"""Static analysis on bad input ends with one clear ``error:`` line and a non-zero exit:
an SM the DSL does not know, a kernel whose compile the DSL rejects (its diagnostic, with the
example path and line), and a missing cuobjdump. Nothing is recorded or cached."""

from __future__ import annotations

import pytest

from kernelplan import ShapeError, sessions
from kernelplan.cli import package_main, run_argv

from .conftest import needs_sources


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "kpcache"
    monkeypatch.setenv("KERNELPLAN_CACHE", str(d))
    return d


def _last_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _nothing_written(results_dir, cache_dir):
    assert not results_dir.exists() or not any(results_dir.rglob("*.json"))
    assert not cache_dir.exists() or not any(cache_dir.rglob("entry.json"))


@needs_sources
def test_unknown_sm(capsys, results_dir, cache_dir):
    rc = package_main("gemm-tutorial", ["fp16_gemm_0", "--prof_type", "static", "--arch", "sm_42"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert err.startswith("error: unknown target arch 'sm_42'") and "sm_100a" in err
    _nothing_written(results_dir, cache_dir)


@needs_sources
def test_compile_rejected_by_the_dsl_shows_its_diagnostic_and_the_example_line(
    capsys, results_dir, cache_dir, monkeypatch
):
    from dataclasses import dataclass

    from cute_gemm.blackwell_common import BlackwellGemmConfig
    from cute_gemm.dense_gemm.dense_gemm import BlackwellDenseGemm

    @dataclass(frozen=True)
    class UncheckedConfig(BlackwellGemmConfig):
        """The config without its own check: the DSL itself rejects the tile."""

        def validate(self) -> None:
            return None

    class Unchecked(BlackwellDenseGemm):
        config_type = UncheckedConfig

        def default_config(self, problem):
            return UncheckedConfig.from_dict(super().default_config(problem).to_dict())

    with pytest.raises(ShapeError, match="mma_tiler_mn M=64 unsupported"):  # the adapter's
        BlackwellDenseGemm().config(BlackwellDenseGemm().problem(), {"mma_tiler_mn": "64x64"})
    argv = ["--prof_type", "static", "--m", "256", "--n", "256", "--k", "256"]
    rc = run_argv(Unchecked(), [*argv, "--config", "mma_tiler_mn=64x64"])
    err = capsys.readouterr().err
    last = _last_line(err)
    assert rc == 2
    assert last.startswith("error: gemm/dense_gemm: compile for sm_100a failed at ")
    assert "cute/blackwell/kernel/dense_gemm/dense_gemm.py:L" in last
    assert "expects the M-mode to be 128 or 256, but got 64" in last
    assert "DSL diagnostic" in err  # the DSL's own text comes first, on stderr
    _nothing_written(results_dir, cache_dir)

    # The same kernel in a package-wide analysis: an error line, the others go on, exit 1.
    class UncheckedDefault(Unchecked):
        def default_config(self, problem):
            return super().default_config(problem).replace(mma_tiler_mn=(64, 64))

    monkeypatch.setattr(sessions, "_plans", lambda package, kernel: [UncheckedDefault()])
    lines = []
    rc = sessions.analyze_package("gemm", record=False, log=lines.append)
    assert rc == 1
    assert any(
        ln.startswith("error: dense_gemm: gemm/dense_gemm: compile for sm_100a") for ln in lines
    )


@needs_sources  # the compile before the SASS step needs the example sources
def test_missing_cuobjdump(capsys, results_dir, cache_dir, monkeypatch, tmp_path):
    from kernelplan import static

    monkeypatch.setattr(static, "_wheel_tool_dirs", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    rc = package_main("gemm-tutorial", ["fp16_gemm_0", "--prof_type", "static"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert err.startswith("error: ") and "cuobjdump" in err and "nvidia-cuda-cuobjdump" in err

    rc = sessions.main(["analyze", "gemm-tutorial", "--no-record"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and _last_line(err).startswith("error: ") and "nvidia-cuda-cuobjdump" in err
    _nothing_written(results_dir, cache_dir)
