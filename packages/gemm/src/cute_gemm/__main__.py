"""``uv run gemm <kernel> [options]`` / ``python -m cute_gemm <kernel> [options]``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("gemm")


if __name__ == "__main__":
    sys.exit(main())
