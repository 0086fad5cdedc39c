"""`python -m cute_mla.torch_reference` runs this implementation; see torch_reference.py."""

from .torch_reference import TorchReference

__all__ = ["TorchReference"]
