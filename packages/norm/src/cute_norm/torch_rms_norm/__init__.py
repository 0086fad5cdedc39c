"""torch_rms_norm: see ``torch_rms_norm.py``."""
