"""flash_attn4_bwd: see ``flash_attn4_bwd.py``."""
