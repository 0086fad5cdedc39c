"""sdpa_cudnn: see ``sdpa_cudnn.py``."""
