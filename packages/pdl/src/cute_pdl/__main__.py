"""``uv run pdl <kernel> [options]`` / ``python -m cute_pdl <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("pdl")


if __name__ == "__main__":
    sys.exit(main())
