"""sdpa_efficient: see ``sdpa_efficient.py``."""
