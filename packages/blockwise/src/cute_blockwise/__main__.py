"""``uv run blockwise <kernel> [options]`` / ``python -m cute_blockwise <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("blockwise")


if __name__ == "__main__":
    sys.exit(main())
