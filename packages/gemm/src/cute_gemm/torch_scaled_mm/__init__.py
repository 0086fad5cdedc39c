"""torch_scaled_mm: see ``torch_scaled_mm.py``."""
