import pytest

from kernelplan.roofline import PEAKS, lookup_peaks, roofline


def test_gemm_roofline_arithmetic_on_h200():
    m = n = k = 4096
    flops = 2 * m * n * k
    nbytes = 3 * m * n * 2
    r = roofline(flops, nbytes, 200.0, "NVIDIA H200", "float16")
    assert r.tflops == pytest.approx(flops / 200e-6 / 1e12)
    assert r.gbps == pytest.approx(nbytes / 200e-6 / 1e9)
    assert r.peak_row == "H200 SXM"
    assert r.pct_peak_tflops == pytest.approx(100 * r.tflops / 989.4)
    assert r.bound == "compute"


def test_memory_bound_kernel():
    r = roofline(1e6, 1e9, 300.0, "NVIDIA H100 80GB HBM3", "bfloat16")
    assert r.bound == "memory" and r.peak_row == "H100 SXM"
    assert r.pct_peak_gbps == pytest.approx(100 * (1e9 / 300e-6 / 1e9) / 3350.0)


def test_lookup_prefers_the_longest_match_and_knows_the_required_devices():
    assert lookup_peaks("NVIDIA H200 NVL")[0] == "H200 NVL"
    assert lookup_peaks("NVIDIA H200")[0] == "H200 SXM"
    for name in ("NVIDIA B200", "NVIDIA B300", "NVIDIA GeForce RTX 5090", "NVIDIA H100 SXM5"):
        assert lookup_peaks(name) is not None, name
    assert lookup_peaks("Tesla K80") is None
    assert all(row["source"] for row in PEAKS.values())


def test_unknown_device_still_gives_throughput_and_bad_time_raises():
    r = roofline(2e12, 1e9, 1000.0, "Some GPU", "float16")
    assert r.tflops == pytest.approx(2000.0) and r.pct_peak_tflops is None
    with pytest.raises(ValueError):
        roofline(1, 1, 0.0, None, "float16")
