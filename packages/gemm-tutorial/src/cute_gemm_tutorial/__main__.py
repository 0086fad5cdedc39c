"""``uv run gemm-tutorial <kernel> [options]`` / ``python -m cute_gemm_tutorial <kernel>``."""

import sys

from kernelplan.cli import package_main


def main() -> int:
    return package_main("gemm-tutorial")


if __name__ == "__main__":
    sys.exit(main())
