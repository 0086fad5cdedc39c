"""sdpa_flash: see ``sdpa_flash.py``."""
