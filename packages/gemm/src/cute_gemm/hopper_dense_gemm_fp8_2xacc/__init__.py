"""hopper_dense_gemm_fp8_2xacc: see ``hopper_dense_gemm_fp8_2xacc.py``."""
