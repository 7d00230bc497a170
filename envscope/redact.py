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

``for_host(host, child)`` makes one from what a host holds: every value the
host's one secret rule calls a secret, in its process env, in the context's
parent env (a routed home's scope and sources) and in a child it built.

``RedactingFilter(redactor)`` is a ``logging.Filter`` that masks each record's
message (its arguments merged in), its exception and its stack text.

The search is an Aho–Corasick automaton (``ahocorasick-rs``, ``pip install
envscope[redact]``), one pass over the text whatever the number of values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from envscope.errors import ConfigurationError

if TYPE_CHECKING:
    import logging

    from envscope.host import Host
    from envscope.policy.surfaces import Surface

__all__ = [
    "FLOOR",
    "ByteStream",
    "RedactingFilter",
    "Redactor",
    "TextStream",
    "for_host",
    "spellings",
]

FLOOR = 8
"""The shortest value masked: a shorter one would mask ordinary words and numbers."""

T = TypeVar("T", str, bytes)


def _automaton(values: list[Any], as_bytes: bool) -> Any:
    try:
        import ahocorasick_rs
    except ImportError:
        raise ConfigurationError(
            "Redactor needs the ahocorasick-rs package (pip install envscope[redact])"
        ) from None
    kind = ahocorasick_rs.MatchKind.LeftmostLongest
    make = ahocorasick_rs.BytesAhoCorasick if as_bytes else ahocorasick_rs.AhoCorasick
    return make(values, matchkind=kind)


class _Masks(Generic[T]):
    """One kind of text (``str`` or ``bytes``): the values, their masks, the automaton."""

    def __init__(self, pairs: list[tuple[T, T]], as_bytes: bool) -> None:
        self.values: list[T] = [value for value, _ in pairs]
        self.masks: list[T] = [mask for _, mask in pairs]
        self.longest = max((len(v) for v in self.values), default=0)
        self.automaton = _automaton(self.values, as_bytes) if pairs else None
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

    def masked(self, text: T, matches: list[tuple[int, int, int]], start: int, stop: int) -> T:
        """``text[start:stop]`` with each of ``matches`` (all inside it) masked."""
        parts: list[T] = []
        at = start
        for index, begin, end in matches:
            parts.append(text[at:begin])
            parts.append(self.masks[index])
            at = end
        parts.append(text[at:stop])
        return text[:0].join(parts)


def spellings(value: str) -> list[str]:
    """``value`` and the escaped forms a consumer prints it in, each once, ``value`` first.

    JSON string escaping (as ``json.dumps`` writes it, with and without
    ``ensure_ascii``) and URL encoding (``quote`` with no safe characters, and
    ``quote_plus``): a token in a JSON log line or in a query string is masked
    as the token itself is.
    """
    import json
    from urllib.parse import quote, quote_plus

    forms = [
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
    ]
    return list(dict.fromkeys(forms))


class Redactor:
    """Masks the values of ``secrets`` (shorter than ``FLOOR``: ignored).

    ``secrets`` is ``{NAME: value}``, or ``(NAME, value)`` pairs where one name
    may hold several values (a launch value and a routed home's own).
    """

    def __init__(self, secrets: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
        pairs_in = secrets.items() if isinstance(secrets, Mapping) else secrets
        first_name: dict[str, str] = {}
        for name, value in sorted(pairs_in):
            if not isinstance(value, str) or not isinstance(name, str):
                raise ConfigurationError("Redactor: secrets must map names to string values")
            if len(value) >= FLOOR:
                for spelling in spellings(value):
                    first_name.setdefault(spelling, name)
        pairs = sorted(first_name.items())
        self._text: _Masks[str] = _Masks([(v, f"[REDACTED:{n}]") for v, n in pairs], False)
        self._text_names = [name for _, name in pairs]
        encoded: dict[bytes, str] = {}
        for value, name in pairs:
            encoded.setdefault(value.encode("utf-8"), name)
        byte_pairs = sorted(encoded.items())
        self._bytes: _Masks[bytes] = _Masks(
            [(v, f"[REDACTED:{n}]".encode()) for v, n in byte_pairs], True
        )
        self._bytes_names = [name for _, name in byte_pairs]
        self.names = frozenset(first_name.values())

    def __repr__(self) -> str:
        return f"Redactor({len(self._text.values)} values)"  # never a value

    def redact(self, text: str) -> str:
        """``text`` with every value masked."""
        masks = self._text
        return masks.masked(text, masks.matches(text), 0, len(text))

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every value's UTF-8 masked."""
        masks = self._bytes
        return masks.masked(data, masks.matches(data), 0, len(data))

    def names_in(self, output: str | bytes) -> list[str]:
        """The names whose values occur in ``output`` (sorted, each once): never a value."""
        if isinstance(output, bytes):
            found = {self._bytes_names[i] for i, _, _ in self._bytes.matches(output)}
        else:
            found = {self._text_names[i] for i, _, _ in self._text.matches(output)}
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
    leftmost-longest scan over the whole text would mark the same there.
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
        safe = len(text) - masks.longest + 1  # a value starting before this ends in text
        if safe <= 0:
            self._pending = text
            return text[:0]
        done = [m for m in masks.matches(text) if m[1] < safe]
        cut = max(safe, done[-1][2]) if done else safe
        self._pending = text[cut:]
        return masks.masked(text, done, 0, cut)

    def close(self) -> T:
        """The held text, masked; the stream takes no more."""
        self._closed = True
        text, self._pending = self._pending, self._pending[:0]
        return self._masks.masked(text, self._masks.matches(text), 0, len(text))


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
    in these envs has each masked.
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
    return Redactor(secrets)


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
