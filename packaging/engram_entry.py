"""Entry script of the desktop bundle: the same `engram` as the installed command."""

import sys

from app.main import main

if __name__ == "__main__":
    sys.exit(main())
