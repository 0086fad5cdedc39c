"""``uv run fmha <kernel> [options]`` / ``python -m cute_fmha <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("fmha")


if __name__ == "__main__":
    sys.exit(main())
