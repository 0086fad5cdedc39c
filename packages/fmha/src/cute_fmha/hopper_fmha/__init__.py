"""hopper_fmha: see ``hopper_fmha.py``."""
