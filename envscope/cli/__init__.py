"""The command line (``envscope = envscope.cli:main``) and its config file.

Owns argument parsing and the commands (``main``) and the config-file loader
(``config``). The top layer: may import anything in envscope; nothing in
envscope imports it.
"""

from __future__ import annotations

from envscope.cli.main import main

__all__ = ["main"]
