"""Read a plugin manifest's bytes into plain values, with a line for every node.

This is the YAML half of manifest loading (``_manifest_schema`` validates the
result). It is imported lazily by ``parse_manifest``, so ``import envscope``
never loads PyYAML.

The document is read with PyYAML's *safe* parser (libyaml's ``CSafeLoader``
when available) as an event stream and composed here, iteratively, into dicts,
lists and scalars. Composing ourselves, rather than calling ``yaml.safe_load``,
lets us refuse what a manifest has no use for before any of it is built:

- anchors and aliases (an alias bomb never expands);
- nesting deeper than ``MAX_DEPTH`` (checked per event: no recursion at all);
- duplicate mapping keys (the error names both lines);
- tags other than the standard ``!!str !!int !!float !!bool !!null !!seq !!map``;
- more than one YAML document.

Every error is a ``ManifestError`` (or the ``error`` class the caller names:
the config file and catalogs are read here too) naming the file, the line where
known and the field path; no message ever repeats a value of the document, and
no error carries the parser's exception (which holds the text) as its context.

A plain block manifest (most of them) is read faster by ``_read_block``, line
by line; only when libyaml parses the text into as many events is that read
kept. Anything else, and every error, is ``_Composer``'s.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from envscope._manifest_schema import MAX_MANIFEST_BYTES, render_path, yaml_type_name
from envscope.errors import FileError, ManifestError

__all__ = [
    "MAX_DEPTH",
    "MAX_MANIFEST_BYTES",
    "Document",
    "NodePath",
    "read_document",
    "render_path",
    "yaml_type_name",
]

MAX_DEPTH = 64

NodePath = tuple[object, ...]
"""Where a node sits: mapping keys and sequence indexes from the root."""

_STD = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"{_STD}{t}" for t in ("str", "int", "float", "bool", "null"))
_SEQ, _MAP = f"{_STD}seq", f"{_STD}map"
_TIMESTAMP, _MERGE, _VALUE = f"{_STD}timestamp", f"{_STD}merge", f"{_STD}value"
_EXPLICIT_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL})
_NO_ALIASES = "YAML anchors and aliases (&name, *name) are not allowed in a {kind}"
_ALLOWED_TAGS_TEXT = "!!str, !!int, !!float, !!bool, !!null, !!seq and !!map"

_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)
# Characters YAML does not allow in a stream (C0/C1 controls other than tab/LF/CR/NEL, …).
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"  # the ASCII part of the above
# PyYAML's pure-Python messages quote a character or a tag from the document: redact it.
_QUOTED = re.compile(r"'(?!<)[^']{3,}'|\"[^\"]{3,}\"")

_RESOLVER = Resolver()


def _resolve(value: str, implicit: tuple[bool, bool]) -> str:
    """The tag the safe resolver gives a scalar (``!!int`` for ``42``, …)."""
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
    return tag


_SCALAR_CONSTRUCTORS: Mapping[str, Callable[[SafeConstructor, yaml.ScalarNode], object]] = {
    _NULL: SafeConstructor.construct_yaml_null,
    _BOOL: SafeConstructor.construct_yaml_bool,
    _INT: SafeConstructor.construct_yaml_int,
    _FLOAT: SafeConstructor.construct_yaml_float,
    _TIMESTAMP: SafeConstructor.construct_yaml_timestamp,
}


@dataclass(frozen=True, slots=True)
class Document:
    """A composed manifest: the root value (``None`` for an empty stream) and node lines.

    ``lines`` maps a node's path to its 1-based line; for a mapping value that
    is the line of its key. ``empty`` is True when the stream held no document.
    """

    root: object
    lines: Mapping[NodePath, int]
    empty: bool = False


def _loader_class() -> Callable[[str], Any]:
    """The safe loader to read events with: libyaml's when PyYAML was built with it."""
    loader: Callable[[str], Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_manifest(
    data: bytes,
    path: str,
    *,
    error: type[FileError] = ManifestError,
    kind: str = "manifest",
    max_bytes: int = MAX_MANIFEST_BYTES,
) -> str:
    """Check the size and encoding of YAML bytes and return the text (UTF-8, BOM dropped)."""
    if len(data) > max_bytes:
        raise error(path, f"{kind} is larger than {max_bytes} bytes ({len(data)} bytes)")
    if data.isascii() and not data.translate(None, _PRINTABLE_ASCII):
        return data.decode("ascii")  # the common case, in one pass: no BOM, NUL or control
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            raise error(path, f"{kind} is {encoding}-encoded; save it as UTF-8", line=1)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise error(
            path,
            f"{kind} contains a NUL byte (a binary or UTF-16 file?); save it as UTF-8",
            line=_line_at(data, nul),
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # raised below, outside the handler: no context
        bad_at = exc.start
    else:
        bad_at = -1
    if bad_at >= 0:
        raise error(
            path, f"{kind} is not valid UTF-8; save it as UTF-8", line=_line_at(data, bad_at)
        )
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        raise error(
            path,
            f"{kind} contains a control character (U+{ord(bad.group()):04X})",
            line=text.count("\n", 0, bad.start()) + 1,
        )
    return text


@dataclass(slots=True)
class _Frame:
    container: dict[Any, Any] | list[object]
    path: NodePath
    key: object = None
    expecting_key: bool = True
    key_lines: dict[Any, int] = field(default_factory=dict)


_NO_ROOT = object()


class _Composer:
    """Builds plain values from parser events, refusing what a manifest must not hold."""

    def __init__(
        self, path: str, error: type[FileError] = ManifestError, kind: str = "manifest"
    ) -> None:
        self.path = path
        self.error = error
        self.kind = kind
        self.stack: list[_Frame] = []
        self.lines: dict[NodePath, int] = {}
        self.root: object = _NO_ROOT
        self.constructor = SafeConstructor()

    def fail(self, message: str, line: int, node_path: NodePath = ()) -> FileError:
        return self.error(self.path, message, line=line, field=render_path(node_path) or None)

    def run(self, loader: Any) -> Document:
        documents = 0
        while True:
            event = loader.get_event()
            line: int = event.start_mark.line + 1
            if isinstance(event, yaml.StreamEndEvent):
                break
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise self.fail(f"a {self.kind} must be a single YAML document", line)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                self.stack.pop()
            elif isinstance(event, yaml.AliasEvent):
                raise self.fail(_NO_ALIASES.format(kind=self.kind), line)
            elif isinstance(event, yaml.NodeEvent):
                self.node(event, line)
        if self.root is _NO_ROOT:
            return Document(root=None, lines={}, empty=True)
        return Document(root=self.root, lines=self.lines)

    def node(self, event: yaml.NodeEvent, line: int) -> None:
        top = self.stack[-1] if self.stack else None
        is_key = top is not None and isinstance(top.container, dict) and top.expecting_key
        if top is None:
            here: NodePath = ()
        elif is_key:
            here = top.path
        elif isinstance(top.container, dict):
            here = (*top.path, top.key)
        else:
            here = (*top.path, len(top.container))
        if event.anchor is not None:
            raise self.fail(_NO_ALIASES.format(kind=self.kind), line, here)
        if isinstance(event, yaml.ScalarEvent):
            value = self.scalar(event, line, here)
            if is_key:
                assert top is not None
                self.add_key(top, value, line)
            else:
                self.place(top, value, line)
            return
        if is_key:
            raise self.fail("mapping keys must be plain scalars", line, here)
        assert isinstance(event, yaml.CollectionStartEvent)
        is_map = isinstance(event, yaml.MappingStartEvent)
        if event.tag not in (None, "!", _MAP if is_map else _SEQ):
            raise self.fail(
                f"YAML tags other than {_ALLOWED_TAGS_TEXT} are not allowed", line, here
            )
        container: dict[Any, Any] | list[object] = {} if is_map else []
        node_path = self.place(top, container, line)
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(f"nesting is deeper than {MAX_DEPTH} levels", line, node_path)
        self.stack.append(_Frame(container=container, path=node_path))

    def place(self, top: _Frame | None, value: object, line: int) -> NodePath:
        """Attach a value under the current container; record its line; return its path."""
        if top is None:
            self.root = value
            node_path: NodePath = ()
        elif isinstance(top.container, dict):
            node_path = (*top.path, top.key)
            line = top.key_lines[top.key]
            top.container[top.key] = value
            top.expecting_key = True
        else:
            node_path = (*top.path, len(top.container))
            top.container.append(value)
        self.lines[node_path] = line
        return node_path

    def add_key(self, top: _Frame, key: object, line: int) -> None:
        if key in top.key_lines:
            first = top.key_lines[key]
            raise self.fail(
                f"duplicate key (first defined on line {first})", line, (*top.path, key)
            )
        top.key_lines[key] = line
        top.key = key
        top.expecting_key = False

    def scalar(self, event: yaml.ScalarEvent, line: int, here: NodePath) -> object:
        tag = event.tag
        value: str = event.value
        if tag is None:
            tag = _resolve(value, event.implicit)
        elif tag == "!":
            tag = _STR
        elif tag not in _EXPLICIT_SCALAR_TAGS:
            raise self.fail(
                f"YAML tags other than {_ALLOWED_TAGS_TEXT} are not allowed", line, here
            )
        elif tag != _STR and _resolve(value, (True, False)) != tag:
            raise self.fail(f"scalar does not match its !!{tag[len(_STD) :]} tag", line, here)
        construct = _SCALAR_CONSTRUCTORS.get(tag)
        if construct is None:  # str, and the merge (<<) / value (=) keys read as plain strings
            return value
        try:
            return construct(self.constructor, yaml.ScalarNode(tag, value))
        except (ValueError, KeyError, IndexError, OverflowError):  # its message holds the value
            pass
        raise self.fail(f"scalar is not a valid !!{tag[len(_STD) :]}", line, here)


# -- the block reader: most manifests, line by line, without an object per parser event --------
# A line is blank, a comment, or its indentation, an optional "- ", then ``key:`` and
# maybe a value, or a value: a one-line plain scalar of a safe ASCII alphabet (no "#",
# no ": ", no leading indicator), a quoted scalar with nothing to unescape, or "[]"/"{}".
# Any other line, or one not indented where a block goes on, gives the document up to
# ``_Composer``. ``_LINES`` matches no line break, so ``findall`` gives one row per line
# exactly when all are of the shape; backtracking is linear (each run of one character
# class ends at a character outside it). The caller keeps a document read this way only
# when libyaml parses the text into as many events.
_PLAIN_INNER = r"[A-Za-z0-9_./~()+=',!?@%\"$&*;<>|^-]"  # neither ":", "#" nor " "
_ONE_VALUE = (
    r"[A-Za-z0-9_./~(+]" + _PLAIN_INNER + r"*+(?:(?::|[ ]++)" + _PLAIN_INNER + r"++)*+"
    r"|'[ -&(-~]*+'|\"[ !#-\[\]-~]*+\"|\[\]|\{\}"  # quoted: printable ASCII, no escapes
)
_LINES_PATTERN = (  # possessive (*+, ++) only where what follows is never a character given back
    r"^( *+)(?:(-[ ]++)?(?:([A-Za-z_][A-Za-z0-9_-]{0,127}+):(?:[ ]++(" + _ONE_VALUE + r"))?"
    r"|(" + _ONE_VALUE + r"))(?:[ ]+#[^\n]*+)?[ ]*+|#[^\n]*+)?$"
)
if sys.version_info < (3, 11):  # no possessive quantifiers: the same lines, with backtracking
    _LINES_PATTERN = _LINES_PATTERN.replace("*+", "*").replace("++", "+").replace("}+", "}")
_LINES = re.compile(_LINES_PATTERN, re.MULTILINE)
_NOT_PLAIN = "'\"[{"  # how a quoted value or an empty flow collection starts
_BLOCK_DEPTH = 32
_GAVE_UP = object()
_NO_KEY = object()
_CONSTRUCTOR = SafeConstructor()
_Resolvers = list[tuple[str, re.Pattern[str]]]


def _construct_plain(value: str, resolvers: _Resolvers) -> object:
    """A plain scalar, given its first character's implicit resolvers, as ``_Composer`` reads it.

    ``_GAVE_UP`` when its constructor fails (``_Composer`` then words the error).
    """
    for resolved, regexp in resolvers:
        if regexp.match(value):
            tag = resolved
            break
    else:
        return value
    if tag == _BOOL:  # what construct_yaml_bool returns, without building a node
        return _CONSTRUCTOR.bool_values[value.lower()]
    if tag == _NULL:
        return None
    construct = _SCALAR_CONSTRUCTORS.get(tag)
    if construct is None:  # the merge (<<) and value (=) keys read as plain strings
        return value
    try:
        return construct(_CONSTRUCTOR, yaml.ScalarNode(tag, value))
    except (ValueError, KeyError, IndexError, OverflowError):
        return _GAVE_UP


def _read_block(text: str) -> tuple[Document, int] | None:
    """The document of a plain block manifest and its number of parser events; else None."""
    implicit: dict[object, _Resolvers] = _RESOLVER.yaml_implicit_resolvers
    if (
        None in implicit
        or _RESOLVER.yaml_path_resolvers
        or not implicit.keys().isdisjoint(_NOT_PLAIN)
    ):
        return None  # a resolver table changed at run time: leave it all to _Composer
    if not text.isascii() or "\t" in text or "\r" in text:
        return None
    if text.startswith("---"):  # an explicit document start, alone on the first line
        first, newline, rest = text.partition("\n")
        if first.rstrip(" ") != "---":
            return None
        text = newline + rest
    rows: list[tuple[str, str, str, str, str]] = _LINES.findall(text)
    if len(rows) != text.count("\n") + 1:
        return None  # some line is of another shape
    null: object = _NO_KEY  # a key with no value, read when first needed
    names: dict[str, object] = {}  # keys as read ("name" is in every entry)
    lines: dict[NodePath, int] = {}
    stack: list[tuple[int, Any, NodePath, dict[object, int] | None]] = []
    mappings: list[dict[object, int]] = []  # the key lines of each mapping
    top: Any = None  # the innermost open collection, with its column, path, key lines
    top_col = -1
    top_path: NodePath = ()
    keys: dict[object, int] | None = None
    pending: object = _NO_KEY  # a key of ``top`` still waiting for its value
    pending_line = 0
    extra = 4  # events besides one per node and one per key: stream and document
    # start and end, and one more per collection (its end)
    for number, (indent, dash, key, inline, value) in enumerate(rows, 1):
        if not key:
            if not value:
                continue  # blank, or a comment
            if not dash:
                return None  # a bare value: a multi-line or a top-level scalar
        col = len(indent)
        if pending is not _NO_KEY:
            path: NodePath = (*top_path, pending)
            lines[path] = pending_line
            if col > top_col or (dash and col == top_col):  # a block under the key
                if len(stack) >= _BLOCK_DEPTH:
                    return None
                new: Any = [] if dash else {}
                top[pending] = new
                stack.append((top_col, top, top_path, keys))
                top_col, top, top_path, keys = col, new, path, None if dash else {}
                if keys is not None:
                    mappings.append(keys)
                extra += 1
            else:
                if null is _NO_KEY:
                    null = _construct_plain("", implicit.get("", []))
                top[pending] = null
            pending = _NO_KEY
        if col != top_col:
            while col < top_col:
                top_col, top, top_path, keys = stack.pop()
            if col != top_col:
                if top is not None or col or dash:
                    return None
                top, top_col, keys = {}, 0, {}  # the root mapping
                mappings.append(keys)
                lines[()] = number
                extra += 1
        if dash:
            if keys is not None:
                return None  # an entry where a key belongs
            path = (*top_path, len(top))
            lines[path] = number
            if key:  # "- key: …" opens a mapping in the sequence
                if len(stack) >= _BLOCK_DEPTH:
                    return None
                new = {}
                top.append(new)
                stack.append((top_col, top, top_path, keys))
                top_col, top, top_path, keys = col + len(dash), new, path, {}
                mappings.append(keys)
                extra += 1
        elif keys is None:  # a key ends a sequence indented like its own key
            top_col, top, top_path, keys = stack.pop()
            if col != top_col or keys is None:
                return None
        if key:
            name: object = key
            if key[0] in implicit:  # it may read as something else: true, null…
                name = names.get(key, _NO_KEY)
                if name is _NO_KEY:
                    name = names[key] = _construct_plain(key, implicit[key[0]])
            if name is _GAVE_UP or name in keys:  # type: ignore[operator]
                return None
            keys[name] = number  # type: ignore[index]
            if not inline:
                pending, pending_line = name, number
                continue
            value = inline
            path = (*top_path, name)
            lines[path] = number
        resolvers = implicit.get(value[0])
        if resolvers:
            item = _construct_plain(value, resolvers)
            if item is _GAVE_UP:
                return None
        elif value[0] not in _NOT_PLAIN:
            item = value
        elif value[0] == "[" or value[0] == "{":
            item = [] if value[0] == "[" else {}
            extra += 1
        else:
            item = value[1:-1]
        if key:
            top[name] = item
        else:
            top.append(item)
    if top is None:
        return None
    if pending is not _NO_KEY:
        top[pending] = _construct_plain("", implicit.get("", []))
        path = (*top_path, pending)
        lines[path] = pending_line
    root = stack[0][1] if stack else top
    return Document(root=root, lines=lines), extra + len(lines) + sum(map(len, mappings))


try:
    from yaml._yaml import CParser as _CParser
except ImportError:  # PyYAML without libyaml: no block reader
    _CParser = None  # type: ignore[assignment, misc]

_LIBYAML = getattr(yaml, "CSafeLoader", None)


def _libyaml_events(text: str) -> int:
    """How many events libyaml parses ``text`` into (in C, building no object); -1 on an error."""
    try:
        count: int = _CParser(text).raw_parse()
    except yaml.YAMLError:
        return -1
    return count


def _redact(text: str) -> str:
    return _QUOTED.sub("'…'", text)


def _failure(exc: Exception, path: str, error: type[FileError]) -> FileError:
    """The typed error for a parser failure, built from its position and redacted words only."""
    if isinstance(exc, RecursionError):
        return error(path, f"nesting is deeper than {MAX_DEPTH} levels")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        parts = [_redact(part) for part in (exc.context, exc.problem) if part]
        return error(
            path,
            "invalid YAML: " + (": ".join(parts) or type(exc).__name__),
            line=mark.line + 1 if mark is not None else None,
        )
    reason = getattr(exc, "reason", None)
    message = _redact(reason) if isinstance(reason, str) else type(exc).__name__
    return error(path, f"invalid YAML: {message}")


def read_document(
    data: bytes,
    path: str,
    *,
    error: type[FileError] = ManifestError,
    kind: str = "manifest",
    max_bytes: int = MAX_MANIFEST_BYTES,
) -> Document:
    """Decode and compose YAML bytes; raise ``error`` (``ManifestError``) on anything unreadable.

    ``kind`` names the file in messages ("manifest", "config", "catalog").
    """
    text = decode_manifest(data, path, error=error, kind=kind, max_bytes=max_bytes)
    loader_class = _loader_class()
    if loader_class is _LIBYAML and _LIBYAML is not None:
        block = _read_block(text)
        if block is not None and _libyaml_events(text) == block[1]:
            return block[0]
    loader = loader_class(text)
    try:
        return _Composer(path, error, kind).run(loader)
    except (RecursionError, yaml.YAMLError) as exc:  # the parser's error holds the text
        failure = _failure(exc, path, error)
    finally:
        loader.dispose()
    raise failure  # outside the handler: the error has no __context__
