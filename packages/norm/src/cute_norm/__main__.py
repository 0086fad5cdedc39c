"""``uv run norm <kernel> [options]`` / ``python -m cute_norm <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("norm")


if __name__ == "__main__":
    sys.exit(main())
