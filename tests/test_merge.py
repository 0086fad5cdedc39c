"""``python -m kernelplan.records merge``: records from a runner come into results/ without
ever replacing one; another schema or other pinned commits are refused, one line each."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile

import pytest

from kernelplan.cutlass_src import PINNED_COMMIT, PINNED_DSL
from kernelplan.errors import KernelPlanError
from kernelplan.records import SCHEMA_VERSION, merge_records, write_record


def _rec(**kw):
    rec = {
        "kind": "benchmark",
        "package": "gemm",
        "kernel": "hopper_dense_gemm",
        "timing": {"median_us": 5.0},
    }
    rec.update(kw)
    return rec


def _runner_out(tmp_path, n=2):
    """A runner's ``--results-dir``: records written by write_record (this checkout's schema)
    with this checkout's pins, a gpu-ci summary and an ncu report beside them."""
    out = tmp_path / "runner" / "records"
    paths = [write_record(_rec(i=i, env=_env()), out) for i in range(n)]
    rep = out / "gemm" / "hopper-dense-gemm" / "ncu-reports" / "x.ncu-rep.xz"
    rep.parent.mkdir(parents=True)
    rep.write_bytes(b"\xfd7zXZ fake")
    summ = out / "gpu-ci" / "2026-12-01-nvidia-h200" / "summary-gemm.md"
    summ.parent.mkdir(parents=True)
    summ.write_text("# gpu-ci\n")
    return out, paths


def _lines():
    lines: list[str] = []
    return lines, lines.append


def test_merge_folder_then_again_is_identical(tmp_path):
    src, paths = _runner_out(tmp_path)
    into = tmp_path / "results"
    lines, log = _lines()
    r = merge_records(src, into, log=log)
    assert len(r["merged"]) == 4 and not r["refused"]
    for p in paths:  # same place and name as write_record gave it, same bytes
        assert (into / "gemm" / "hopper-dense-gemm" / p.name).read_bytes() == p.read_bytes()
    assert (into / "gemm/hopper-dense-gemm/ncu-reports/x.ncu-rep.xz").exists()
    assert (into / "gpu-ci/2026-12-01-nvidia-h200/summary-gemm.md").read_text() == "# gpu-ci\n"
    assert lines[-1].startswith("merged 4, identical 0, refused 0")
    lines, log = _lines()
    r = merge_records(src, into, log=log)
    assert not r["merged"] and len(r["identical"]) == 4 and not r["refused"]
    assert lines == [f"merged 0, identical 4, refused 0 into {into}"]


def test_never_overwrites_a_record_with_other_contents(tmp_path):
    src, paths = _runner_out(tmp_path, n=1)
    into = tmp_path / "results"
    dest = into / "gemm" / "hopper-dense-gemm" / paths[0].name
    dest.parent.mkdir(parents=True)
    dest.write_text('{"kept": true}\n')
    lines, log = _lines()
    r = merge_records(src, into, log=log)
    assert dest.read_text() == '{"kept": true}\n'  # untouched
    assert len(r["refused"]) == 1 and len(r["merged"]) == 2
    refusal = [ln for ln in lines if ln.startswith("refused")]
    assert len(refusal) == 1 and "exists with other contents (never overwritten)" in refusal[0]
    assert lines[-1].startswith("merged 2, identical 0, refused 1 (1 other contents)")


def _raw(folder, name, rec):
    p = folder / "gemm" / "hopper-dense-gemm" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(rec))
    return p


def _env(**kw):
    return {"cutlass_commit_pinned": PINNED_COMMIT, "nvidia_cutlass_dsl": PINNED_DSL, **kw}


def test_refuses_other_schema_and_other_pins(tmp_path):
    src = tmp_path / "src"
    _raw(src, "ok.json", _rec(schema=SCHEMA_VERSION, env=_env()))
    _raw(src, "old.json", _rec(schema=SCHEMA_VERSION - 1, env=_env()))
    _raw(src, "new.json", _rec(schema=SCHEMA_VERSION + 1, env=_env()))
    _raw(src, "cutlass.json", _rec(schema=SCHEMA_VERSION, env=_env(cutlass_commit_pinned="abc")))
    _raw(src, "dsl.json", _rec(schema=SCHEMA_VERSION, env=_env(nvidia_cutlass_dsl="4.4.2")))
    _raw(src, "noenv.json", _rec(schema=SCHEMA_VERSION))
    _raw(src, "notrec.json", {"hello": 1})
    into = tmp_path / "results"
    lines, log = _lines()
    r = merge_records(src, into, log=log)
    assert [p.rsplit("/", 1)[-1] for p in r["merged"]] == ["ok.json"]
    why = {p.rsplit("/", 1)[-1]: w for p, w in r["refused"]}
    assert why["old.json"] == f"schema {SCHEMA_VERSION - 1}, this checkout writes schema 2"
    assert why["new.json"].startswith(f"schema {SCHEMA_VERSION + 1},")
    assert why["cutlass.json"] == (
        f"env.cutlass_commit_pinned is 'abc', this checkout pins '{PINNED_COMMIT}'"
    )
    assert (
        why["dsl.json"] == f"env.nvidia_cutlass_dsl is '4.4.2', this checkout pins '{PINNED_DSL}'"
    )
    assert why["noenv.json"].startswith("env.cutlass_commit_pinned is None")
    assert why["notrec.json"].startswith("not a result record")
    assert sorted(p.name for p in into.rglob("*.json")) == ["ok.json"]
    assert len([ln for ln in lines if ln.startswith("refused ")]) == 6
    assert lines[-1] == (
        f"merged 1, identical 0, refused 6 (2 schema, 3 pinned commits, 1 not a record) into {into}"
    )


@pytest.mark.parametrize("kind", ["tgz", "zip"])
def test_merge_archive_with_a_wrapping_folder(tmp_path, kind):
    src, paths = _runner_out(tmp_path)
    arc = tmp_path / f"records.{kind}"
    if kind == "tgz":
        with tarfile.open(arc, "w:gz") as t:
            t.add(src.parent, arcname="artifact")  # artifact/records/gemm/...
    else:
        with zipfile.ZipFile(arc, "w") as z:
            for p in src.rglob("*"):
                if p.is_file():
                    z.write(p, f"artifact/{p.relative_to(src.parent)}")
    into = tmp_path / "results"
    r = merge_records(arc, into, log=lambda s: None)
    assert len(r["merged"]) == 4 and not r["refused"]
    assert sorted(p.name for p in (into / "gemm" / "hopper-dense-gemm").glob("*.json")) == sorted(
        p.name for p in paths
    )
    assert (into / "gpu-ci/2026-12-01-nvidia-h200/summary-gemm.md").exists()
    assert r["merged"][0].startswith(f"{arc}:artifact/records/")


def test_a_summary_only_archive_and_a_bad_source(tmp_path):
    d = tmp_path / "wrap" / "gpu-ci" / "2026-12-01-cpu"
    d.mkdir(parents=True)
    (d / "summary.md").write_text("x")
    into = tmp_path / "results"
    r = merge_records(tmp_path / "wrap", into, log=lambda s: None)
    assert len(r["merged"]) == 1 and (into / "gpu-ci/2026-12-01-cpu/summary.md").exists()
    bad = tmp_path / "bad.tgz"
    bad.write_text("not an archive")
    with pytest.raises(KernelPlanError, match="not a .tgz, .tar or .zip archive"):
        merge_records(bad, into, log=lambda s: None)


def test_cli_exit_codes(tmp_path):
    src, _ = _runner_out(tmp_path, n=1)
    into = tmp_path / "results"
    cmd = [sys.executable, "-m", "kernelplan.records", "merge", str(src), "--into", str(into)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == f"merged 3, identical 0, refused 0 into {into}"
    _raw(src, "old.json", _rec(schema=1, env=_env()))
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 1
    out = r.stdout.strip().splitlines()
    assert out[-1] == f"merged 0, identical 3, refused 1 (1 schema) into {into}"
    assert out[0].startswith("refused ") and out[0].endswith(
        "old.json: schema 1, this checkout writes schema 2"
    )
    r = subprocess.run(cmd[:4] + [str(tmp_path / "nope")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: merge:")


@pytest.mark.parametrize("field", ["package", "kernel", "kind"])
def test_a_non_string_package_kernel_or_kind_is_refused_in_one_line(tmp_path, field):
    """Trial 4 defect 4: schema and pins right, ``package`` (or ``kernel``, ``kind``) a number
    or a list: refused with one line (no traceback from the folder name), nothing written,
    exit 1."""
    src = tmp_path / "src"
    _raw(src, "a.json", _rec(schema=SCHEMA_VERSION, env=_env(), **{field: 123}))
    _raw(src, "b.json", _rec(schema=SCHEMA_VERSION, env=_env(), **{field: ["x"]}))
    into = tmp_path / "into"
    cmd = [sys.executable, "-m", "kernelplan.records", "merge", str(src), "--into", str(into)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    out = r.stdout.strip().splitlines()
    assert out[0].endswith(f"a.json: not a result record ({field} 123: not a string)")
    assert out[1].endswith(f"b.json: not a result record ({field} ['x']: not a string)")
    assert out[-1] == f"merged 0, identical 0, refused 2 (2 not a record) into {into}"
    assert not into.exists() or not [p for p in into.rglob("*") if p.is_file()]
