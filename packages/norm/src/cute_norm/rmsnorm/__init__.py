"""rmsnorm: see ``rmsnorm.py``."""
