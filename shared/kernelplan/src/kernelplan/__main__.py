import sys

from .sessions import main

if __name__ == "__main__":
    sys.exit(main())
