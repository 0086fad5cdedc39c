"""``uv run blockscaled <kernel> [options]`` / ``python -m cute_blockscaled <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("blockscaled")


if __name__ == "__main__":
    sys.exit(main())
