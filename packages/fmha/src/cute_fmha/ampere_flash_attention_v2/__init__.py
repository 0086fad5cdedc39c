"""ampere_flash_attention_v2: see ``ampere_flash_attention_v2.py``."""
