"""sdpa_cudnn_bwd: see ``sdpa_cudnn_bwd.py``."""
