"""Mask secret values in what children print: whole, inside longer text, across chunks.

``Redactor(secrets)`` takes ``{NAME: value}`` and masks every occurrence of
every value of at least ``FLOOR`` characters, and of its JSON-escaped and
URL-encoded forms (``spellings``), with ``[REDACTED:NAME]`` (never any part
of the value). Where values overlap, the leftmost occurrence wins,
then the longest (one scan, as a reader would mark them); a value held under
several names is masked with the first name in sorted order.

- ``redact(text)`` and ``redact_bytes(data)`` mask a whole text (``bytes``
  match the values' UTF-8).
- ``stream()`` and ``byte_stream()`` mask a stream: ``feed(chunk)`` returns
  what can be released, ``close()`` the rest. A value split across chunks is
  masked as if the text came whole; nothing is held back longer than the
  longest value (in any of its spellings) less one character (or byte).

``Redactor(secrets, shapes=True)`` also masks every credential of a known
format (``envscope.policy.formats``: a GitHub token, an AWS key, a JWT, a
URL's password) that no value names, as ``[REDACTED:<format>]``. Where a value
and a credential overlap, the masked region is their union (no part of
either survives). A stream masks a credential split across chunks too: it
holds back, besides the above, the line not yet ended (a credential does not
span lines), at most ``SHAPE_HOLD`` characters (the longest match a format
may have).

``for_host(host, child)`` makes one from what a host holds: every value the
host's one secret rule calls a secret, in its process env, in the context's
parent env (a routed home's scope and sources) and in a child it built, and
(``shapes=True``, the default there) every credential by its format.

``RedactingFilter(redactor)`` is a ``logging.Filter`` that masks each record's
message (its arguments merged in), its exception and its stack text.

The search is an Aho–Corasick automaton (``ahocorasick-rs``, ``pip install
envscope[redact]``), one pass over the text whatever the number of values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from envscope.errors import ConfigurationError
from envscope.policy.formats import MAX_MATCH

if TYPE_CHECKING:
    import logging
    from collections.abc import Iterator

    from envscope.host import Host
    from envscope.policy.formats import CredentialFormat, FormatTable
    from envscope.policy.surfaces import Surface

__all__ = [
    "FLOOR",
    "SHAPE_HOLD",
    "ByteStream",
    "RedactingFilter",
    "Redactor",
    "TextStream",
    "for_host",
    "spellings",
]

FLOOR = 8
"""The shortest value masked: a shorter one would mask ordinary words and numbers."""

SHAPE_HOLD = MAX_MATCH
"""The most of a line not yet ended a stream holds back for credential formats.

The longest match any format may have (``policy.formats.MAX_MATCH``, pinned per
row), so a credential that arrives in pieces is masked whole."""

T = TypeVar("T", str, bytes)
Region = tuple[int, int, Any, bool]  # start, end, its mask, whether a format found it


def _automaton(values: list[Any], as_bytes: bool, *, every: bool = False) -> Any:
    """An Aho–Corasick automaton of ``values``: leftmost-longest, or (``every``) overlapping."""
    try:
        import ahocorasick_rs
    except ImportError:
        raise ConfigurationError(
            "Redactor needs the ahocorasick-rs package (pip install envscope[redact])"
        ) from None
    kind = ahocorasick_rs.MatchKind.Standard if every else ahocorasick_rs.MatchKind.LeftmostLongest
    make = ahocorasick_rs.BytesAhoCorasick if as_bytes else ahocorasick_rs.AhoCorasick
    return make(values, matchkind=kind)


class _Shapes:
    """The credential format table and automata of its prefixes (``str`` and ASCII bytes).

    A format's match starts with its row's literal prefix, so the table's regex
    is tried only where a prefix begins (``FormatTable.spans_at``), found in one
    pass over the text with every occurrence, overlapping ones included.
    """

    def __init__(self, table: FormatTable) -> None:
        prefixes = list(table.prefixes)
        self.table = table
        self.text = _automaton(prefixes, False, every=True)
        self.bytes = _automaton([p.encode("ascii") for p in prefixes], True, every=True)

    def spans(self, text: str | bytes) -> Iterator[tuple[CredentialFormat, int, int]]:
        """Each credential in ``text`` (bytes: positions of their Latin-1 reading)."""
        if isinstance(text, bytes):
            found = self.bytes.find_matches_as_indexes(text, overlapping=True)
            plain = text.decode("latin-1")  # one character per byte: the same positions
        elif text.isascii():
            found = self.bytes.find_matches_as_indexes(text.encode("ascii"), overlapping=True)
            plain = text
        else:
            found = self.text.find_matches_as_indexes(text, overlapping=True)
            plain = text
        starts = sorted({start for _, start, _ in found})
        return self.table.spans_at(plain, starts)


_KEPT_SHAPES: list[_Shapes] = []  # the last table's automata: one slot, keyed by identity


def _shapes_of(table: FormatTable) -> _Shapes:
    """``table``'s ``_Shapes``, kept for the next redactor (building one costs ~0.35 ms).

    Keyed by the table's identity in one slot: ``policy.formats.reset_table()``
    makes a new table, so it resets this too.
    """
    kept = _KEPT_SHAPES[0] if _KEPT_SHAPES else None
    if kept is not None and kept.table is table:
        return kept
    made = _Shapes(table)
    _KEPT_SHAPES[:] = [made]
    return made


class _Masks(Generic[T]):
    """One kind of text (``str`` or ``bytes``): the values, their masks, the automaton.

    ``shapes`` finds credentials by format, when they are masked too.
    """

    def __init__(
        self, pairs: list[tuple[T, T]], as_bytes: bool, shapes: _Shapes | None = None
    ) -> None:
        self.values: list[T] = [value for value, _ in pairs]
        self.masks: list[T] = [mask for _, mask in pairs]
        self.longest = max((len(v) for v in self.values), default=0)
        self.automaton = _automaton(self.values, as_bytes) if pairs else None
        self.shapes = shapes
        self.as_bytes = as_bytes
        self.newline: T = b"\n" if as_bytes else "\n"  # type: ignore[assignment]
        # ASCII text (most output) is searched as bytes, about 1.6x faster: the same
        # values in the same order, so an index is the same value's, and a position
        # in ASCII bytes is the same position in the str. A non-ASCII value's UTF-8
        # cannot occur in ASCII text.
        self.ascii = None
        if pairs and not as_bytes:
            self.ascii = _automaton([str(v).encode("utf-8") for v in self.values], True)

    def matches(self, text: T) -> list[tuple[int, int, int]]:
        """(value index, start, end) of each leftmost-longest occurrence, in order."""
        if self.automaton is None:
            return []
        if self.ascii is not None and isinstance(text, str) and text.isascii():
            by_bytes: list[tuple[int, int, int]] = self.ascii.find_matches_as_indexes(
                text.encode("ascii")
            )
            return by_bytes
        found: list[tuple[int, int, int]] = self.automaton.find_matches_as_indexes(text)
        return found

    def regions(self, text: T) -> list[Region]:
        """What to mask in ``text``, in order: each value found, and each credential by format.

        Without formats these are the values' leftmost-longest occurrences; with
        them, a region where a value and a credential (or two credentials)
        overlap is their union, masked with the leftmost's mask (a value's
        before a format's at the same position: it names the key).
        """
        masks = self.masks
        found: list[Region] = [(b, e, masks[i], False) for i, b, e in self.matches(text)]
        if self.shapes is None:
            return found
        shaped: list[Region] = [
            (b, e, self._shape_mask(fmt.name), True) for fmt, b, e in self.shapes.spans(text)
        ]
        if not shaped:
            return found
        merged: list[Region] = []
        for region in sorted(found + shaped, key=lambda r: (r[0], r[3], -r[1])):
            if merged and region[0] < merged[-1][1]:  # overlaps the last: one region
                b, e, mask, shape = merged[-1]
                merged[-1] = (b, max(e, region[1]), mask, shape or region[3])
            else:
                merged.append(region)
        return merged

    def _shape_mask(self, name: str) -> T:
        mask = f"[REDACTED:{name}]"
        return mask.encode() if self.as_bytes else mask  # type: ignore[return-value]

    def masked(self, text: T, regions: list[Region], start: int, stop: int) -> T:
        """``text[start:stop]`` with each of ``regions`` (all inside it) masked."""
        parts: list[T] = []
        at = start
        for begin, end, mask, _ in regions:
            parts.append(text[at:begin])
            parts.append(mask)
            at = end
        parts.append(text[at:stop])
        return text[:0].join(parts)


def spellings(value: str) -> list[str]:
    """``value`` and the escaped forms a consumer prints it in, each once, ``value`` first.

    JSON string escaping (as ``json.dumps`` writes it, with and without
    ``ensure_ascii``) and URL encoding (``quote`` with no safe characters, and
    ``quote_plus``): a token in a JSON log line or in a query string is masked
    as the token itself is. A value of several lines is spelt with its line
    ends as ``\n`` and as ``\r\n`` too (a terminal writes ``\r\n``; text mode
    reads ``\n``), each form escaped as above.
    """
    import json
    from urllib.parse import quote, quote_plus

    lines = [value]
    if "\n" in value:
        lf = value.replace("\r\n", "\n")
        lines += [lf, lf.replace("\n", "\r\n")]
    forms = []
    for line in dict.fromkeys(lines):
        forms += [
            line,
            json.dumps(line, ensure_ascii=False)[1:-1],
            json.dumps(line)[1:-1],
            quote(line, safe=""),
            quote_plus(line, safe=""),
        ]
    return list(dict.fromkeys(forms))


class Redactor:
    """Masks the values of ``secrets`` (shorter than ``FLOOR``: ignored).

    ``secrets`` is ``{NAME: value}``, or ``(NAME, value)`` pairs where one name
    may hold several values (a launch value and a routed home's own).
    ``shapes=True``: every credential of a known format is masked too.
    """

    def __init__(
        self,
        secrets: Mapping[str, str] | Iterable[tuple[str, str]],
        *,
        shapes: bool = False,
    ) -> None:
        pairs_in = secrets.items() if isinstance(secrets, Mapping) else secrets
        first_name: dict[str, str] = {}
        for name, value in sorted(pairs_in):
            if not isinstance(value, str) or not isinstance(name, str):
                raise ConfigurationError("Redactor: secrets must map names to string values")
            if len(value) >= FLOOR:
                for spelling in spellings(value):
                    first_name.setdefault(spelling, name)
        pairs = sorted(first_name.items())
        table = None
        if shapes:
            from envscope.policy.formats import format_table

            table = _shapes_of(format_table())
        self.shapes = shapes
        self._text: _Masks[str] = _Masks([(v, f"[REDACTED:{n}]") for v, n in pairs], False, table)
        self._text_names = [name for _, name in pairs]
        encoded: dict[bytes, str] = {}
        for value, name in pairs:
            encoded.setdefault(value.encode("utf-8"), name)
        byte_pairs = sorted(encoded.items())
        self._bytes: _Masks[bytes] = _Masks(
            [(v, f"[REDACTED:{n}]".encode()) for v, n in byte_pairs], True, table
        )
        self._bytes_names = [name for _, name in byte_pairs]
        self.names = frozenset(first_name.values())

    def __repr__(self) -> str:
        shapes = ", shapes" if self.shapes else ""
        return f"Redactor({len(self._text.values)} values{shapes})"  # never a value

    def redact(self, text: str) -> str:
        """``text`` with every value (and with ``shapes``, every credential) masked."""
        masks = self._text
        return masks.masked(text, masks.regions(text), 0, len(text))

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every value's UTF-8 (and with ``shapes``, every credential) masked."""
        masks = self._bytes
        return masks.masked(data, masks.regions(data), 0, len(data))

    def names_in(self, output: str | bytes) -> list[str]:
        """The names whose values occur in ``output`` (sorted, each once): never a value.

        With ``shapes``, the name of each credential format found too.
        """
        if isinstance(output, bytes):
            found = {self._bytes_names[i] for i, _, _ in self._bytes.matches(output)}
        else:
            found = {self._text_names[i] for i, _, _ in self._text.matches(output)}
        if self._text.shapes is not None:
            found |= {fmt.name for fmt, _, _ in self._text.shapes.spans(output)}
        return sorted(found)

    def stream(self) -> TextStream:
        """A stream of ``str`` chunks to mask."""
        return TextStream(self._text)

    def byte_stream(self) -> ByteStream:
        """A stream of ``bytes`` chunks to mask."""
        return ByteStream(self._bytes)


class _Stream(Generic[T]):
    """Masks a stream: ``feed`` releases what no later chunk can change, ``close`` the rest.

    A position is released once the text after it is as long as the longest
    value: no value starting there can reach past what has arrived, so the
    leftmost-longest scan over the whole text would mark the same there. With
    formats, the text is released up to a line's start (or ``SHAPE_HOLD``
    back, the longest any format's match may be): no format's match crosses a
    line end but Docker's ``"auth":`` row, whose match ends at a closing
    quote, so a match starting on an ended line is whole, and the next search
    starts at a line's start, with the left context a format looks back on
    (a Mailchimp key's hex before ``-us``, a ``password=``).
    """

    def __init__(self, masks: _Masks[T], empty: T) -> None:
        self._masks: _Masks[T] = masks
        self._pending: T = empty
        self._closed = False

    @property
    def held(self) -> int:
        """How many characters (or bytes) are held back, waiting for the next chunk."""
        return len(self._pending)

    def feed(self, chunk: T) -> T:
        """What of ``chunk`` (and the held text before it) can be released, masked."""
        if self._closed:
            raise ConfigurationError("this stream was closed")
        text = self._pending + chunk
        masks = self._masks
        end = len(text)
        safe = end - masks.longest + 1  # a value starting before this ends in text
        if masks.shapes is not None:  # back to a line's start (its left context), bounded
            safe = max(text.rfind(masks.newline, 0, max(safe, 0)) + 1, end - SHAPE_HOLD)
        if safe <= 0:
            self._pending = text
            return text[:0]
        done = [r for r in masks.regions(text) if r[0] < safe]
        cut = max(safe, done[-1][1]) if done else safe
        self._pending = text[cut:]
        return masks.masked(text, done, 0, cut)

    def close(self) -> T:
        """The held text, masked; the stream takes no more."""
        self._closed = True
        text, self._pending = self._pending, self._pending[:0]
        return self._masks.masked(text, self._masks.regions(text), 0, len(text))


class TextStream(_Stream[str]):
    """A stream of ``str`` chunks (``Redactor.stream()``)."""

    def __init__(self, masks: _Masks[str]) -> None:
        super().__init__(masks, "")


class ByteStream(_Stream[bytes]):
    """A stream of ``bytes`` chunks (``Redactor.byte_stream()``)."""

    def __init__(self, masks: _Masks[bytes]) -> None:
        super().__init__(masks, b"")


def for_host(
    host: Host,
    child: Mapping[str, str] | None = None,
    *,
    surface: Surface | str = "terminal",
    shapes: bool = True,
) -> Redactor:
    """A redactor of every secret value ``host`` holds in this context, and ``child``'s.

    Each entry of the host's process env, of the parent env a build in this
    context starts from (under ``routed(home)``: the home's ``.env``, its
    sources' values, the managed keys) and of ``child`` (an env the host
    built) is decided by the one secret rule a build for ``surface`` applies,
    as the host's own (the auditor's view, as ``explain --show-values``
    masks): a declared name, a source's credential, a launch secret, a
    credential format, a credential by its name's context. Two carried facts
    add to it, whatever the rule says of the name: a value under a name a
    secret source supplied (at launch, or for the routed home), and a pair
    of ``child`` a build handed over as given (a grant, a forced hand-over,
    an MCP block entry: ``host.admitted``). A name holding different values
    in these envs has each masked. ``shapes``: every credential of a known
    format is masked too, whoever holds it (a token a child fetched itself).
    """
    from envscope.pipeline.decision import held_as_secret

    rule = host.secret_rule(surface=surface)
    supplied = {name.upper() for name in host.source_names_here()}
    secrets: set[tuple[str, str]] = set()
    given = dict(child or {})
    for env in (host.environ_snapshot(), host.parent_env(), given):
        for key, value in env.items():
            if (
                key.upper() in supplied
                or (env is given and host.admitted(key, value))
                or held_as_secret(rule, key, value)
            ):
                secrets.add((key, value))
    return Redactor(secrets, shapes=shapes)


class RedactingFilter:
    """A ``logging`` filter (handler or logger) that masks the values of a ``Redactor``.

    The record's message is formatted with its arguments, masked, and kept
    with no arguments left; the exception and stack text are formatted and
    masked too, so a handler prints them as they are. It never drops a record.
    Give a handler this filter, so records from every logger are masked.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask ``record`` in place; keep it."""
        import logging as _logging

        redact = self.redactor.redact
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = _logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
