"""``uv run epilogue <kernel> [options]`` / ``python -m cute_epilogue <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("epilogue")


if __name__ == "__main__":
    sys.exit(main())
