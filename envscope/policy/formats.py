"""Credential formats: values that are secrets whatever their name.

The table lives in ``envscope/policy/data/credential_formats.yaml``, one row
per format: its name, issuer, category, the literal ``prefix`` the format
starts with (or, for a few formats, the literal a fixed context precedes),
the ``pattern`` of the rest, the issuer's own documentation as ``source``, a
fake ``example`` of the real shape, an optional ``checksum`` (a structural
check done in code after the pattern matched) and an optional ``provider``
(the catalog provider whose model-provider key the format is).

``find_format(value)`` finds a credential anywhere in a value: bare, inside
a URL's userinfo or path, after ``Bearer``, in quotes, in a ``:``/``,``
separated list, on one line of many. It is **one compiled pass**: every row
becomes one branch of a single regex whose branches each start with a
literal character (so the regex engine skips every position that cannot
start a credential); a match whose checksum fails, or that a named filter
(``FILTERS``: a provider's documented example key, a URL template's
password slot) takes for a stand-in, resumes the same search one character
later. Each row is anchored at the start of a run of token
characters (a branch first matches its literal, then looks back one
character), and no quantified part of a row can run past the characters the
row's alphabet allows, so a search is linear in the length of the value.

The table is read on first use and kept (``find_format.cache_clear`` is not a
thing: ``reset_table()`` is the test seam); nothing is read at import.
"""

from __future__ import annotations

import binascii
import enum
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envscope.errors import CatalogError
from envscope.policy._placeholders import is_placeholder

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

__all__ = [
    "FILTERS",
    "FORMATS_SOURCE",
    "MAX_MATCH",
    "Checksum",
    "CredentialFormat",
    "FormatTable",
    "filtered",
    "find_format",
    "format_table",
    "github_checksum",
    "reset_table",
]

FORMATS_SOURCE = "envscope/policy/data/credential_formats.yaml"
MAX_MATCH = 20_000
"""No row matches more characters (``tests/policy/test_formats.py`` pins every row's
width): a search attempt is bounded, and a stream that holds this much back
(``envscope.redact``) sees any credential whole."""
MAX_FORMATS_BYTES = 128 * 1024
# A row is anchored at the start of a run of these characters: the character
# before its prefix (and, by default, after its end) is not one of them.
TOKEN_CHARS = "A-Za-z0-9_\\-"
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FIELDS = frozenset(
    {"name", "issuer", "category", "prefix", "pattern", "source", "example", "checksum",
     "provider", "before", "run_before", "boundary", "cross_checks"}
)  # fmt: skip
_URL_PREFIXES = ("://", ":\\/\\/")  # the rows of URLs whose userinfo holds a password (JSON: \/)
_REQUIRED = ("name", "issuer", "category", "prefix", "pattern", "source", "example")


class Checksum(enum.Enum):
    """A check a match must also pass (code, named by the table)."""

    GITHUB_CRC32 = "github-crc32"
    """The last 6 characters are the base62 CRC32 of the body between prefix and them."""
    JWT_HEADER = "jwt-header"
    """The first segment decodes to a JSON object naming an ``alg``."""
    DISCORD_USER_ID = "discord-user-id"
    """The run before the first dot decodes (base64) to a decimal user id."""
    BASIC_CREDENTIALS = "basic-credentials"
    """The base64 body (quotes and blanks aside) decodes to printable ``user:password``."""
    PEM_PRIVATE_BASE64 = "pem-private-base64"
    """The match decodes (base64) to a PEM block whose first line names a private key."""
    JWT_BASE64 = "jwt-base64"
    """The match decodes (base64) to a JWT whose first segment names an ``alg``."""
    SERVICE_ACCOUNT_JSON = "service-account-json"
    """The match decodes (base64) to JSON naming ``service_account`` and a ``private_key``."""


@dataclass(frozen=True, slots=True)
class RunBefore:
    """A run of characters that must precede the prefix: its alphabet and its length bounds."""

    chars: str
    min: int
    max: int


@dataclass(frozen=True, slots=True)
class CredentialFormat:
    """One row of the table: a credential format, who issues it and where that is documented."""

    name: str
    issuer: str
    category: str
    source: str
    provider: str | None
    prefix: str
    pattern: str
    example: str
    checksum: Checksum | None = None
    before: str | None = None
    run_before: RunBefore | None = None
    boundary: bool = True
    cross_checks: tuple[str, ...] = ()

    @property
    def regex(self) -> str:
        """This row's regex on its own (the branch ``find_format`` compiles into one pass)."""
        return _branch(self)


def _branch(fmt: CredentialFormat) -> str:
    """The row's regex: prefix, a look back past it, the rest, a look ahead."""
    width = len(fmt.prefix)
    parts = [re.escape(fmt.prefix)]
    if fmt.before is not None:
        parts.append(f"(?<=(?:{fmt.before})(?s:.{{{width}}}))")
    elif fmt.boundary and fmt.run_before is None:  # a run_before is checked after the match
        parts.append(f"(?<![{TOKEN_CHARS}](?s:.{{{width}}}))")
    parts.append(f"(?:{fmt.pattern})")
    if fmt.boundary:
        parts.append(f"(?![{TOKEN_CHARS}])")
    return "".join(parts)


def github_checksum(body: str) -> str:
    """The 6-character base62 CRC32 GitHub (and npm) append to a token's random body."""
    n = binascii.crc32(body.encode("ascii"))
    digits = []
    while n:
        n, r = divmod(n, 62)
        digits.append(_BASE62[r])
    return "".join(reversed(digits)).rjust(6, "0")


def _secret_part(fmt: CredentialFormat, token: str) -> str | None:
    """The part of a match that holds the secret, where a row names one.

    A URL row's password (``://user:password@``), a ``key=`` row's value; None
    for a token row (the whole match is the secret, and no stand-in has its shape).
    """
    if fmt.prefix in _URL_PREFIXES:
        return token[len(fmt.prefix) : -1].partition(":")[2]
    if fmt.prefix.endswith("="):
        return token[len(fmt.prefix) :]
    return None


def _holds_a_stand_in(fmt: CredentialFormat, token: str) -> bool:
    part = _secret_part(fmt, token)
    return part is not None and is_placeholder(part)


FILTERS: tuple[tuple[str, str, Callable[[CredentialFormat, str], bool]], ...] = (
    (
        "documented-example",
        "a match that ends in `EXAMPLE` or `EXAMPLEKEY`: a provider's documented example key"
        " (AWS's `AKIAIOSFODNN7EXAMPLE`)",
        lambda fmt, token: token.endswith(("EXAMPLE", "EXAMPLEKEY")),
    ),
    (
        "placeholder",
        "a URL's password or a `key=` row's value that is a template slot or stand-in word"
        " (`{password}`, `<PASSWORD>`, `%s`, `PASSWORD`, `xxxxxx`, `changeme`:"
        " `policy._placeholders`)",
        lambda fmt, token: _holds_a_stand_in(fmt, token),
    ),
)
"""Named filters (detect-secrets' model): name, what it takes, its test. A match one of
them takes is a stand-in, no credential; the search resumes one character later."""


def filtered(fmt: CredentialFormat, token: str) -> str | None:
    """The name of the first filter that takes ``token`` (a match of ``fmt``) for a stand-in."""
    for name, _, applies in FILTERS:
        if applies(fmt, token):
            return name
    return None


def _b64decode(text: str) -> bytes | None:
    import base64  # a few formats decode a body: base64 (and struct) load then

    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


def _passes(fmt: CredentialFormat, token: str, run: str) -> bool:
    """True when ``token`` (the match) passes the row's checksum; ``run`` precedes the prefix."""
    check = fmt.checksum
    if check is Checksum.GITHUB_CRC32:
        body = token[len(fmt.prefix) : -6]
        return body.isascii() and github_checksum(body) == token[-6:]
    if check is Checksum.JWT_HEADER:
        header = _b64decode(token.split(".", 1)[0])
        return header is not None and header.lstrip()[:1] == b"{" and b'"alg"' in header
    if check is Checksum.DISCORD_USER_ID:
        user = _b64decode(run)
        return user is not None and user.isdigit() and 15 <= len(user) <= 21
    if check is Checksum.BASIC_CREDENTIALS:
        pair = _b64decode(token[len(fmt.prefix) :].strip().strip('"'))
        user, colon, password = (pair or b"").partition(b":")
        return bool(colon and password) and (user + password).isascii() and _printable(pair)
    if check is Checksum.PEM_PRIVATE_BASE64:
        first = (_b64decode(token) or b"").split(b"\n", 1)[0]
        return first.startswith(b"-----BEGIN ") and first.endswith(b"PRIVATE KEY-----")
    if check is Checksum.JWT_BASE64:
        inner = (_b64decode(token) or b"").decode("ascii", "replace")
        header = _b64decode(inner.split(".", 1)[0]) if inner.count(".") >= 2 else None
        return header is not None and header.lstrip()[:1] == b"{" and b'"alg"' in header
    if check is Checksum.SERVICE_ACCOUNT_JSON:
        doc = _b64decode(token) or b""
        return b'"service_account"' in doc and b'"private_key"' in doc
    return True


def _printable(data: bytes | None) -> bool:
    return data is not None and all(32 <= c < 127 for c in data)


@dataclass(frozen=True, slots=True)
class FormatTable:
    """Every credential format, and the one regex that finds any of them."""

    formats: tuple[CredentialFormat, ...]
    regex: re.Pattern[str]

    @classmethod
    def of(cls, formats: tuple[CredentialFormat, ...]) -> FormatTable:
        """The table of ``formats``, compiled into one pass (a longer prefix wins a tie)."""
        return cls(formats, re.compile(_trie(formats)))

    def find(self, value: str) -> CredentialFormat | None:
        """The first format found anywhere in ``value`` (its checksum passing), or None."""
        for fmt, _, _ in self.spans(value):
            return fmt
        return None

    @property
    def prefixes(self) -> tuple[str, ...]:
        """Each row's literal prefix, once: every match of ``regex`` starts with one."""
        return tuple(dict.fromkeys(fmt.prefix for fmt in self.formats))

    def spans(self, value: str) -> Iterator[tuple[CredentialFormat, int, int]]:
        """Each format found in ``value``, left to right: ``(format, start, end)``.

        A URL whose userinfo holds a token of another row is that row's match
        (it names the credential better); a row whose token begins before its
        prefix (``run_before``: a Telegram bot id, a Mailchimp key's hex) starts
        where that run does; a match is searched for again past the end of the
        one before.
        """
        search = self.regex.search
        return self._spans(value, lambda pos: search(value, pos))

    def spans_at(
        self, value: str, starts: Sequence[int]
    ) -> Iterator[tuple[CredentialFormat, int, int]]:
        """``spans(value)``, given ``starts``: where some row's prefix begins, ascending.

        The regex is tried only there (``envscope.redact`` finds the prefixes
        with an Aho–Corasick automaton, about 8× faster than the regex's own
        search over text with no credential). Every match starts with a
        prefix, so the answer is ``spans``' (pinned by a differential property).
        """
        match = self.regex.match
        at = [0]  # the next candidate: positions asked for only grow

        def next_match(pos: int) -> re.Match[str] | None:
            i = at[0]
            while i < len(starts):
                start = starts[i]
                i += 1
                if start >= pos and (m := match(value, start)) is not None:
                    at[0] = i - 1
                    return m
            at[0] = i
            return None

        return self._spans(value, next_match)

    def _spans(
        self, value: str, next_match: Callable[[int], re.Match[str] | None]
    ) -> Iterator[tuple[CredentialFormat, int, int]]:
        """What ``spans`` answers, with ``next_match(pos)``: the first match at or after ``pos``."""
        pos = 0
        while (m := next_match(pos)) is not None:
            fmt = self.formats[int(m.lastgroup[1:])]  # type: ignore[index]
            start = m.start()
            run = ""
            if fmt.run_before is not None:
                run = _run_before(value, start, fmt.run_before)
            token = m.group()
            if not ((fmt.run_before is None or run) and _passes(fmt, token, run)):
                pos = start + 1
                continue
            if filtered(fmt, token) is not None:  # a stand-in, not a credential
                pos = start + 1
                continue
            found = (fmt, start - len(run), m.end())  # the run before the prefix is the token's
            if fmt.prefix in _URL_PREFIXES:
                # A URL's userinfo: the token inside it, if any, names the credential better.
                inner = self.find(value[start + len(fmt.prefix) : m.end()])
                found = found if inner is None else (inner, start, m.end())
            yield found
            pos = max(m.end(), start + 1)


_Node = dict[str, "_Node | list[int]"]


def _trie(formats: tuple[CredentialFormat, ...]) -> str:
    """One regex for every row: the rows' prefixes as a trie, each row's rest in a named group.

    Every alternative of the top level opens with a literal character, so the
    regex engine skips each position whose character starts no prefix; at the
    others it follows one path of the trie, never every row in turn.
    """
    root: _Node = {}
    for i, fmt in enumerate(formats):
        node = root
        for ch in fmt.prefix:
            child = node.setdefault(ch, {})
            assert isinstance(child, dict)
            node = child
        ends = node.setdefault("", [])
        assert isinstance(ends, list)
        ends.append(i)

    def render(node: _Node, depth: int) -> str:
        alternatives = []
        for ch, child in node.items():
            if ch and isinstance(child, dict):
                alternatives.append(re.escape(ch) + render(child, depth + 1))
        ends = node.get("", [])
        for i in ends if isinstance(ends, list) else ():
            rest = _branch(formats[i])[len(re.escape(formats[i].prefix)) :]
            alternatives.append(f"(?P<f{i}>{rest})")
        if depth and len(alternatives) == 1:
            return alternatives[0]
        return "(?:" + "|".join(alternatives) + ")" if depth else "|".join(alternatives)

    return render(root, 0)


def _run_before(value: str, start: int, spec: RunBefore) -> str:
    """The run of ``spec.chars`` ending at ``start`` when its length is in bounds, else ``""``."""
    allowed = _charset(spec.chars)
    i = start
    floor = max(0, start - spec.max - 1)
    while i > floor and value[i - 1] in allowed:
        i -= 1
    length = start - i
    if i > 0 and value[i - 1] in allowed:
        return ""  # the run is longer than the format allows
    return value[i:start] if spec.min <= length <= spec.max else ""


@functools.cache
def _charset(chars: str) -> frozenset[str]:
    """The characters of a character-class body such as ``A-Za-z0-9_\\-``."""
    return frozenset(c for c in map(chr, range(128)) if re.fullmatch(f"[{chars}]", c))


def _row(raw: object, i: int, source: str) -> CredentialFormat:
    """One validated row (a ``CatalogError`` names the file and the field otherwise)."""

    def fail(field: str, message: str) -> CatalogError:
        return CatalogError(source, message, field=f"formats.{i}.{field}")

    if not isinstance(raw, dict):
        raise fail("", "a row must be a mapping")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise fail(str(unknown[0]), "unknown field")
    for key in _REQUIRED:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise fail(key, "a non-empty string is required")
    if not _SLUG.fullmatch(raw["name"]):
        raise fail("name", "a lower-case slug such as github-classic-pat is required")
    run = raw.get("run_before")
    run_before = None
    if run is not None:
        if not isinstance(run, dict) or set(run) != {"chars", "min", "max"}:
            raise fail("run_before", "needs chars, min and max")
        bounds = (run["min"], run["max"])
        if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in bounds):
            raise fail("run_before", "min and max must be whole numbers of characters")
        run_before = RunBefore(str(run["chars"]), int(run["min"]), int(run["max"]))
    try:
        checksum = None if raw.get("checksum") is None else Checksum(raw["checksum"])
    except ValueError:
        raise fail("checksum", "not a known checksum") from None
    fmt = CredentialFormat(
        name=raw["name"],
        issuer=raw["issuer"],
        category=raw["category"],
        source=raw["source"],
        provider=raw.get("provider"),
        prefix=raw["prefix"],
        pattern=raw["pattern"],
        example=raw["example"],
        checksum=checksum,
        before=raw.get("before"),
        run_before=run_before,
        boundary=bool(raw.get("boundary", True)),
        cross_checks=tuple(raw.get("cross_checks") or ()),
    )
    try:
        re.compile(fmt.pattern)  # on its own too: a broken pattern may compile inside the row's
        compiled = re.compile(fmt.regex)
    except re.error:
        raise fail("pattern", "does not compile") from None
    if compiled.groups:
        raise fail("pattern", "capturing groups are not allowed: use (?:...)")
    return fmt


def table_from_document(doc: Mapping[str, object], source: str) -> FormatTable:
    """The table a parsed document declares (rows validated, names unique)."""
    rows = doc.get("formats")
    if doc.get("version") != 1 or not isinstance(rows, list) or not rows:
        raise CatalogError(source, "needs version: 1 and a non-empty formats list", field="formats")
    formats = tuple(_row(raw, i, source) for i, raw in enumerate(rows))
    seen: set[str] = set()
    for i, fmt in enumerate(formats):
        if fmt.name in seen:
            raise CatalogError(source, "a second row of this name", field=f"formats.{i}.name")
        seen.add(fmt.name)
    return FormatTable.of(formats)


@functools.cache
def format_table() -> FormatTable:
    """The shipped table (read and compiled on first use, then shared)."""
    from envscope.files._yaml import read_document
    from envscope.policy.catalog import package_data

    data = package_data("credential_formats.yaml")
    doc = read_document(
        data, FORMATS_SOURCE, error=CatalogError, kind="format table", max_bytes=MAX_FORMATS_BYTES
    )
    if not isinstance(doc.root, dict):
        raise CatalogError(FORMATS_SOURCE, "must be a mapping", field="<root>")
    return table_from_document(doc.root, FORMATS_SOURCE)


def reset_table() -> None:
    """Forget the loaded table (a test seam: the next call reads the file again)."""
    format_table.cache_clear()


def find_format(value: str) -> CredentialFormat | None:
    """The credential format ``value`` holds (whole or anywhere inside it), or None."""
    return format_table().find(value)
