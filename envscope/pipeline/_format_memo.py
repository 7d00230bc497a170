"""``FormatMemo``: the values a memo owner's last build found to hold no credential format.

A build searches every value its child may receive for a credential format
(``SecretRule.find_in``, DESIGN.md §4a). Between two spawns the parent env is
nearly the same, so nearly every value was searched by the owner's previous
build already, and the search is a pure function of the value and the format
table. Each ``BuildMemo`` holds a ``FormatMemo`` (its owner is a routed home's
share, or the host for unbound builds; an unbound multiplexed build has no
memo and searches every value):

- ``under(table)`` is one build's ``CleanValues``: the values remembered under
  that very table object (``policy.formats.format_table()``; a set remembered
  under another table, such as the one before ``reset_table()``, is ignored);
- ``CleanValues.search`` searches only the values not among them: once for the
  lot, and value by value only when that search finds a format. It then
  remembers the values of *this* build that hold no format, replacing the last
  set wholesale: nothing accumulates across builds. A value that holds a format
  is never remembered, and the rule hands over only the values it still has to
  decide (no value that is or holds a declared secret, none under a
  ``known_safe`` name): the set holds values of the owner's last build in
  which the rule found no secret;
- thread-safe: the table and its values are one tuple, read and replaced as
  one attribute (bindings on several threads share an owner).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from envscope.policy.formats import CredentialFormat, FormatTable

__all__ = ["CleanValues", "FormatMemo"]

_NOTHING: tuple[FormatTable | None, frozenset[str]] = (None, frozenset())


class FormatMemo:
    """One owner's clean values, under the table that found them clean (see the module)."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = _NOTHING

    def under(self, table: FormatTable) -> CleanValues:
        """One build's view: the values known clean under ``table``, and where to remember."""
        held_table, values = self._held
        return CleanValues(values if held_table is table else frozenset(), table, self)

    def remember(self, table: FormatTable, values: frozenset[str]) -> None:
        """Hold ``values`` (found clean under ``table``) in place of whatever was held."""
        self._held = (table, values)

    @property
    def held(self) -> frozenset[str]:
        """The values held now, whatever their table."""
        return self._held[1]

    def __repr__(self) -> str:
        return f"FormatMemo({len(self._held[1])} values)"  # a count, never a value


@dataclass(frozen=True, slots=True, repr=False)
class CleanValues:
    """One build's view of its owner's ``FormatMemo`` under the table the build searches with."""

    known_clean: frozenset[str]  # the values remembered under ``table``
    table: FormatTable
    owner: FormatMemo

    def search(
        self, values: Sequence[str], formats: Callable[[str], CredentialFormat | None]
    ) -> dict[int, CredentialFormat]:
        """The format each value holds, by position (a clean value has none); remembers the clean.

        ``formats`` searches with ``table`` (its ``find``). The values not known
        clean are searched once, joined; only when that finds a format are they
        searched one by one.
        """
        known = self.known_clean
        unknown = [i for i, value in enumerate(values) if value not in known]
        found: dict[int, CredentialFormat] = {}
        if len(unknown) == 1:
            fmt = formats(values[unknown[0]])
            if fmt is not None:
                found[unknown[0]] = fmt
        elif unknown and formats("\x00".join([values[i] for i in unknown])) is not None:
            for i in unknown:
                fmt = formats(values[i])
                if fmt is not None:
                    found[i] = fmt
        clean = values if not found else [v for i, v in enumerate(values) if i not in found]
        self.owner.remember(self.table, frozenset(clean))
        return found

    def __repr__(self) -> str:
        return f"CleanValues({len(self.known_clean)} values)"  # a count, never a value
