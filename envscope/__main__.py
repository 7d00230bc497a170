"""``python -m envscope``: the command line."""

from __future__ import annotations

import sys

from envscope.cli import main

if __name__ == "__main__":
    sys.exit(main())
