"""Placeholders: text that stands where a credential would go, and is none.

One rule for every reader that asks "is this a real credential or a stand-in"
(name context's value test, the credential-format table's
``placeholder`` filter): ``is_placeholder(text)`` is True for the
whole of ``text`` being

- a template slot: ``<PASSWORD>``, ``${VAR}``, ``$VAR``, ``{password}``,
  ``{{ secret }}``, ``%VAR%``, ``[password]``, ``%s``, ``%(password)s``;
- a run of one filler character, 6 or more: ``xxxxxx``, ``******``,
  ``......``, ``######``, ``------``, ``______``, ``000000``;
- a stand-in word, in any case: ``changeme``, ``your-…``/``your_…``,
  ``my-…``/``my_…``, ``replace-me``, ``example``, ``dummy``, ``redacted``,
  ``placeholder``, ``secret``, ``password``, ``passw0rd``, ``passwd``,
  ``pass``, ``pwd``, ``token``, ``test``, ``testing``, ``sample``, ``todo``,
  ``tbd``, ``fixme``.

Pure; the pattern compiles on first use (nothing at import).
"""

from __future__ import annotations

import functools
import re

__all__ = ["PLACEHOLDER", "is_placeholder"]

PLACEHOLDER = (
    r"(?i)^(<[^>]*>|\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|\{\{?[^}]*\}\}?|%[^%]*%|\[[^\]]*\]"
    r"|%(\([^)]*\))?[sd]"
    r"|(?P<run>x|\*|\.|#|-|_|0)(?P=run){5,}"
    r"|(change[-_ ]?me|your[-_].*|my[-_].*|replace[-_]?me|example|dummy|redacted|placeholder"
    r"|secret|password|passw0rd|passwd|pass|pwd|token|test|testing|sample|todo|tbd|fixme)"
    r")$"
)
"""The whole-text pattern ``is_placeholder`` matches (see the module docstring)."""


@functools.cache
def _compiled() -> re.Pattern[str]:
    return re.compile(PLACEHOLDER)


def is_placeholder(text: str) -> bool:
    """True when ``text`` (trimmed) is a template slot, a filler run or a stand-in word."""
    return _compiled().fullmatch(text.strip()) is not None
