"""The knowledge base's tooling: manifest of the pinned CUTLASS examples, lint, catalogs.

Run it as `python -m kernelplan.kb lint|catalog|examples|manifest|new ...`; see
knowledge/README.md for the file formats. Standard library only.
"""

from .cli import main
from .layout import Layout, find_root
from .lint import Defect, lint

__all__ = ["Defect", "Layout", "find_root", "lint", "main"]
