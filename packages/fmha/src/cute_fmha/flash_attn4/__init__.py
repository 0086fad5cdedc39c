"""flash_attn4: see ``flash_attn4.py``."""
