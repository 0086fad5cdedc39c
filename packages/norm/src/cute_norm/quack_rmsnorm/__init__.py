"""quack_rmsnorm: see ``quack_rmsnorm.py``."""
