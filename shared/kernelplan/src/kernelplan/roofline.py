"""Peak throughput per device, and where a measured kernel sits against it.

Peaks are the vendor's dense (no 2:4 sparsity) tensor-core figures at boost clock, per GPU;
each row names its source. ``lookup_peaks`` matches the NVML/torch device name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: TFLOP/s by operand dtype (dense, FP32 accumulate where the vendor distinguishes) and HBM GB/s.
#: Figures the vendor quotes "with sparsity" are halved here.
PEAKS: dict[str, dict[str, Any]] = {
    "H100 SXM": {
        "match": ["H100 80GB HBM3", "H100 SXM"],
        "tflops": {
            "float16": 989.4,
            "bfloat16": 989.4,
            "float8": 1978.9,
            "tfloat32": 494.7,
            "float32": 66.9,
        },
        "gbps": 3350.0,
        "source": "NVIDIA H100 Tensor Core GPU datasheet, SXM column (sparse figures / 2)",
    },
    "H200 SXM": {
        "match": ["H200"],
        "tflops": {
            "float16": 989.4,
            "bfloat16": 989.4,
            "float8": 1978.9,
            "tfloat32": 494.7,
            "float32": 66.9,
        },
        "gbps": 4800.0,
        "source": "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (sparse figures / 2)",
    },
    "H200 NVL": {
        "match": ["H200 NVL"],
        "tflops": {
            "float16": 835.5,
            "bfloat16": 835.5,
            "float8": 1671.0,
            "tfloat32": 417.5,
            "float32": 60.0,
        },
        "gbps": 4800.0,
        "source": "NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column (sparse figures / 2)",
    },
    "B200": {
        "match": ["B200"],
        "tflops": {
            "float16": 2250.0,
            "bfloat16": 2250.0,
            "float8": 4500.0,
            "tfloat32": 1100.0,
            "float32": 75.0,
        },
        "gbps": 8000.0,
        "source": "NVIDIA HGX B200 datasheet, per-GPU (8-GPU sparse figures / 8 / 2)",
    },
    "B300": {
        "match": ["B300"],
        "tflops": {
            "float16": 2250.0,
            "bfloat16": 2250.0,
            "float8": 4500.0,
            "tfloat32": 1100.0,
            "float32": 75.0,
        },
        "gbps": 8000.0,
        "source": "NVIDIA HGX B300 datasheet, per-GPU (8-GPU sparse figures / 8 / 2)",
    },
    "RTX 5090": {
        "match": ["RTX 5090"],
        "tflops": {
            "float16": 209.5,
            "bfloat16": 209.5,
            "float8": 419.0,
            "tfloat32": 104.8,
            "float32": 104.8,
        },
        "gbps": 1792.0,
        "source": "NVIDIA RTX Blackwell GPU architecture whitepaper, RTX 5090 column "
        "(FP32 accumulate, dense)",
    },
}

_DTYPE_CLASS = {
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8",
    "float8_e5m2": "float8",
    "tfloat32": "tfloat32",
    "float32": "float32",
}


def lookup_peaks(device_name: str) -> tuple[str, dict[str, Any]] | None:
    """The PEAKS row whose ``match`` strings best fit ``device_name`` (longest match wins)."""
    best: tuple[int, str] | None = None
    for key, row in PEAKS.items():
        for pat in row["match"]:
            if pat.lower() in device_name.lower() and (best is None or len(pat) > best[0]):
                best = (len(pat), key)
    if best is None:
        return None
    return best[1], PEAKS[best[1]]


@dataclass
class Roofline:
    """Achieved throughput of one timed run against the device's peaks.

    Units: ``tflops`` TFLOP/s, ``gbps`` GB/s (1e9 bytes/s), ``intensity`` FLOP/byte,
    percentages 0-100. ``bound`` is "compute" when the kernel's arithmetic intensity is above
    the ridge point (peak FLOP/s / peak bytes/s), else "memory".
    """

    flops: float
    bytes: float
    time_us: float
    tflops: float
    gbps: float
    intensity: float
    peak_row: str | None = None
    peak_tflops: float | None = None
    peak_gbps: float | None = None
    pct_peak_tflops: float | None = None
    pct_peak_gbps: float | None = None
    bound: str | None = None
    peak_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def roofline(
    flops: float, nbytes: float, time_us: float, device_name: str | None, dtype: str
) -> Roofline:
    """TFLOP/s, GB/s and % of peak for ``flops`` and ``nbytes`` done in ``time_us``.

    ``flops``: algorithmic floating-point operations (2*M*N*K*L for a GEMM); ``nbytes``: the
    minimum bytes the kernel must move to and from DRAM; ``dtype``: the tensor-core operand
    dtype name (torch spelling) that picks the compute peak.

    Raises:
        ValueError: ``time_us`` is not positive.
    """
    if not time_us > 0:
        raise ValueError(f"time must be positive, got {time_us} us")
    secs = time_us * 1e-6
    r = Roofline(
        flops=flops,
        bytes=nbytes,
        time_us=time_us,
        tflops=flops / secs / 1e12,
        gbps=nbytes / secs / 1e9,
        intensity=flops / nbytes if nbytes else float("inf"),
    )
    found = lookup_peaks(device_name) if device_name else None
    if found:
        key, row = found
        r.peak_row, r.peak_source = key, row["source"]
        r.peak_tflops = row["tflops"].get(_DTYPE_CLASS.get(dtype, dtype))
        r.peak_gbps = row["gbps"]
        if r.peak_tflops:
            r.pct_peak_tflops = 100.0 * r.tflops / r.peak_tflops
            ridge = r.peak_tflops * 1e12 / (r.peak_gbps * 1e9)
            r.bound = "compute" if r.intensity >= ridge else "memory"
        r.pct_peak_gbps = 100.0 * r.gbps / r.peak_gbps
    return r
