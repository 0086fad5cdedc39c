"""sdpa_efficient_bwd: see ``sdpa_efficient_bwd.py``."""
