import sys

from .sessions import main

sys.exit(main())
