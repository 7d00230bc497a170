"""Secret values, the part of the one secret rule that searches values (``secret_rule``).

``SecretMatch`` is a secret found in a value (whose it is, how strict, whether
it is the whole value); ``Grade`` says what may still hand it over; ``_Secrets``
holds one domain's secret values as consumers read them (trimmed of
surrounding whitespace and line ends), longest first, for the substring search.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envscope.policy._declarations import Declaration, Origin, Tier

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from envscope.policy.formats import CredentialFormat

__all__ = [
    "MIN_SECRET_LENGTH",
    "Exemption",
    "Grade",
    "SecretMatch",
    "Secrets",
    "Span",
    "as_read",
    "covered",
    "formats_in",
    "inside",
    "stricter_declaration",
    "strictest",
    "tier_grade",
]

MIN_SECRET_LENGTH = 8
"""Shorter values are never secret values: they collide with ordinary values by chance."""


def _padding(char: str) -> bool:
    """Whitespace, a line end, or a format character (a BOM, a zero-width space or joiner)."""
    import unicodedata  # loaded on the first value that starts or ends outside ASCII

    return char.isspace() or unicodedata.category(char) == "Cf"


def as_read(value: str) -> str:
    """A value as consumers read it: without surrounding padding.

    Whitespace and line ends, and format characters (``U+FEFF`` BOM,
    ``U+200B`` zero-width space, ``U+2060`` word joiner, …), which a parser, a
    terminal or a copy and paste drop or never show: a secret wrapped in them is
    the same secret. ASCII has no format character, so a value that starts and
    ends in ASCII costs one ``strip()``.
    """
    read = value.strip()
    if read and (read[0] > "\x7f" or read[-1] > "\x7f"):
        start, end = 0, len(read)
        while start < end and _padding(read[start]):
            start += 1
        while end > start and _padding(read[end - 1]):
            end -= 1
        read = read[start:end]
    return read


class Grade(enum.IntEnum):
    """What may still hand a secret value to a child (higher: stricter)."""

    CREDENTIAL = 1  # a Tier 2 credential this child does not inherit: a grant or the force prefix
    HOST = 2  # a Tier 1 secret or a routed child's launch credential: only a grant
    SOURCE = 3  # a secret source's own credential: nothing, under any key


class Exemption(enum.Enum):
    """A named reason an entry the rule would withhold reaches the child (traced as such).

    Each covers exactly what it names: ``OPERATOR_LITERAL`` a value typed into an
    MCP server's env block (never one the host resolved), ``PROVIDER_KEY`` the
    provider's key as the whole value (never a second credential beside it).
    """

    GRANT = "grant"  # grant= names this exact key of extra
    SERVER_BLOCK = "server-block"  # an MCP server's env block names it: the name passes
    OPERATOR_LITERAL = "operator-literal"  # the operator typed the value: a format passes
    KNOWN_SAFE = "known-safe"  # known_safe names it: a credential format passes
    PROVIDER_KEY = "provider-key"  # a credentialed child's own model-provider key, whole
    FORCED = "forced"  # a forced hand-over of a Tier 2 credential of this home
    TIER2_INHERITED = "tier2-inherited"  # a Tier 2 credential of a child that inherits them
    VALUES_KEPT = "values-kept"  # Host(strip_value_aliases=False): copies are not stripped
    MANAGED = "managed"  # the managed file's entry: a launch value equal to it is not its origin


@dataclass(frozen=True, slots=True, repr=False)
class SecretMatch:
    """A secret found in a value: whose it is, how strict, whether it is the whole value.

    ``shape`` is set for a value of a credential format (docs/credential-formats.md):
    ``name`` is then the format's name, and ``own_provider`` says the key is a
    catalog name of that format's model provider. ``exemption`` is set when the
    rule itself keeps the format (a ``known_safe`` name, a provider's own key).
    """

    name: str  # the declared name whose value it is (upper-cased), or the format's name
    origin: Origin
    grade: Grade
    whole: bool
    launch: bool  # the launch profile's secret, read by a routed build
    shape: bool = False
    own_provider: bool = False
    exemption: Exemption | None = None

    def __repr__(self) -> str:
        return f"SecretMatch(name={self.name!r}, grade={self.grade.name}, whole={self.whole})"


def stricter_declaration(decl: Declaration | None, other: Declaration | None) -> Declaration | None:
    """The stricter of two declarations of one name (Tier 1 wins; else the first given)."""
    if other is None or (decl is not None and decl.tier is Tier.TIER1):
        return decl
    if decl is None or other.tier is Tier.TIER1:
        return other
    return decl


def tier_grade(decl: Declaration, inherit: bool, ungrantable: frozenset[str]) -> Grade | None:
    if decl.name in ungrantable:
        return Grade.SOURCE
    if decl.tier is Tier.TIER1:
        return Grade.HOST
    return None if inherit else Grade.CREDENTIAL


class Secrets:
    """One domain's secret values: value → match, and the values longest first (to search)."""

    __slots__ = ("by_value", "longest_first")

    def __init__(self) -> None:
        self.by_value: dict[str, SecretMatch] = {}
        self.longest_first: list[str] = []

    def add(self, value: str, match: SecretMatch) -> None:
        """Remember a secret as consumers read it (trimmed); the stricter match of a value wins."""
        value = as_read(value)
        if len(value) < MIN_SECRET_LENGTH:
            return
        old = self.by_value.get(value)
        if old is None or match.grade > old.grade:
            self.by_value[value] = match

    def seal(self) -> None:
        self.longest_first = sorted(self.by_value, key=lambda v: (-len(v), v))

    def present_in(self, text: str) -> Secrets:
        """The secrets that occur in ``text`` (one substring search each), as a domain."""
        present = Secrets()
        present.longest_first = [s for s in self.longest_first if s in text]
        present.by_value = {s: self.by_value[s] for s in present.longest_first}
        return present

    def collect(self, read: str, found: list[SecretMatch], spans: list[Span]) -> None:
        """Add to ``found`` every secret the trimmed value ``read`` is or holds.

        Longest first; an occurrence inside a span found already (by this
        domain or one searched before) is part of that secret, not another one,
        unless it is stricter (a Tier 1 value inside a Tier 2 credential's:
        what may hand the outer one over never covers it). Each new
        occurrence's span is added to ``spans``.
        """
        if not self.longest_first:
            return
        whole = self.by_value.get(read)
        if whole is not None and not covered(0, len(read), spans, whole.grade):
            found.append(whole)
            spans.append((0, len(read), whole.grade))
            if whole.grade is Grade.SOURCE:
                return  # nothing is stricter: every part of it is its
        for secret in self.longest_first:
            if len(secret) >= len(read):
                continue
            grade = self.by_value[secret].grade
            new = False
            start = read.find(secret)
            while start != -1:
                end = start + len(secret)
                if not covered(start, end, spans, grade):
                    spans.append((start, end, grade))
                    new = True
                start = read.find(secret, start + 1)
            if new:
                found.append(inside(self.by_value[secret]))


Span = tuple[int, int, Grade]
"""Where a secret occurs in a trimmed value, and its grade: ``(start, end, grade)``."""


def covered(start: int, end: int, spans: Sequence[Span], grade: Grade) -> bool:
    """True when ``[start, end)`` lies inside a span of a secret at least as strict as ``grade``.

    A secret inside a less strict one is a secret of its own: an exemption for
    the outer (a forced Tier 2 credential) must not carry the inner (a Tier 1
    value, a credential format) along.
    """
    return any(s <= start and end <= e and g >= grade for s, e, g in spans)


def strictest(matches: Sequence[SecretMatch]) -> SecretMatch:
    """The match that decides a value: highest grade, a declared secret before a format."""
    return max(matches, key=lambda m: (m.grade, not m.shape, m.whole))


def inside(match: SecretMatch) -> SecretMatch:
    return SecretMatch(match.name, match.origin, match.grade, False, match.launch)


def formats_in(
    values: Sequence[str], known: frozenset[str], formats: Callable[[str], CredentialFormat | None]
) -> dict[int, CredentialFormat]:
    """The format each value holds, by position, skipping the ``known`` clean ones.

    The others are searched once, joined ("\\x00" ends every run of token
    characters); only when that search finds a format is each searched alone.
    """
    unknown = [i for i, value in enumerate(values) if value not in known]
    if not unknown:
        return {}
    first = formats("\x00".join([values[i] for i in unknown]))
    if first is None:
        return {}
    if len(unknown) == 1:
        return {unknown[0]: first}  # the joined text was that one value
    return {i: fmt for i in unknown if (fmt := formats(values[i])) is not None}
