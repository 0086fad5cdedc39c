"""``uv run mixed-input <kernel> [options]`` / ``python -m cute_mixed_input <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("mixed-input")


if __name__ == "__main__":
    sys.exit(main())
