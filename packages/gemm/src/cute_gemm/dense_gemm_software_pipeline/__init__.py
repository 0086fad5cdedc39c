"""`python -m cute_gemm.dense_gemm_software_pipeline` runs this kernel."""

from .dense_gemm_software_pipeline import BlackwellDenseGemmSoftwarePipeline

__all__ = ["BlackwellDenseGemmSoftwarePipeline"]
