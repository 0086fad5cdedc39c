"""hopper_cta_norm: see ``hopper_cta_norm.py``."""
