"""``uv run mamba2 <kernel> [options]`` / ``python -m cute_mamba2 <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("mamba2")


if __name__ == "__main__":
    sys.exit(main())
