"""sdpa_math: see ``sdpa_math.py``."""
