"""sdpa_flash_bwd: see ``sdpa_flash_bwd.py``."""
