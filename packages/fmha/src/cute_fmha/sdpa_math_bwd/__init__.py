"""sdpa_math_bwd: see ``sdpa_math_bwd.py``."""
