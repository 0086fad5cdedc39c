"""torch_eager: see ``torch_eager.py``."""
