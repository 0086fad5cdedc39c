"""``uv run mla <kernel> [options]`` / ``python -m cute_mla <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("mla")


if __name__ == "__main__":
    sys.exit(main())
