"""Read YAML bytes into plain values, with a line for every node.

The one YAML reader of envscope: plugin manifests (``manifests._schema``), the
host config file (``cli.config``) and catalogs (``catalog``) are all read here, each
caller naming its error class, its kind of file and its size limit. It is
imported on first use, so ``import envscope`` never loads PyYAML.

The document is read with PyYAML's *safe* parser (libyaml's ``CSafeLoader``
when available) as an event stream and composed here, iteratively, into dicts,
lists and scalars. Composing ourselves, rather than calling ``yaml.safe_load``,
lets us refuse what these files have no use for before any of it is built:

- more bytes than the caller's limit, a UTF-16/32 BOM, a NUL byte, invalid
  UTF-8 or a control character (the line is named);
- anchors and aliases (an alias bomb never expands);
- nesting deeper than ``MAX_DEPTH`` (checked per event: no recursion at all);
- duplicate mapping keys (the error names both lines);
- tags other than the standard ``!!str !!int !!float !!bool !!null !!seq !!map``;
- more than one YAML document.

Every error is of the class the caller names (``ManifestError``,
``ConfigFileError``, ``CatalogError``) and names the file, the line where known
and the field path; no message ever repeats a value of the document, and no
error carries the parser's exception (which holds the text) as its context.
``validation_error`` turns a schema's pydantic error about a document read here
into the same kind of error, with the same field paths and lines, for every
caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from envscope.errors import FileError

if TYPE_CHECKING:
    import pydantic
    from pydantic_core import ErrorDetails

__all__ = [
    "MAX_DEPTH",
    "Document",
    "NodePath",
    "decode_yaml",
    "locate",
    "read_document",
    "render_path",
    "validation_error",
    "yaml_type_name",
]

MAX_DEPTH = 64

NodePath = tuple[object, ...]
"""Where a node sits: mapping keys and sequence indexes from the root."""

E = TypeVar("E", bound=FileError)

_STD = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"{_STD}{t}" for t in ("str", "int", "float", "bool", "null"))
_SEQ, _MAP = f"{_STD}seq", f"{_STD}map"
_TIMESTAMP = f"{_STD}timestamp"
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
# PyYAML's pure-Python messages quote a character or a tag from the document: redact it.
_QUOTED = re.compile(r"'(?!<)[^']{3,}'|\"[^\"]{3,}\"")

_YAML_TYPE_NAMES = {
    "str": "string",
    "int": "integer",
    "float": "float",
    "bool": "boolean",
    "NoneType": "null",
    "list": "sequence",
    "dict": "mapping",
    "datetime": "timestamp",
    "date": "date",
}


def yaml_type_name(value: object) -> str:
    """The YAML word for a value's type (``string``, ``integer``, ``mapping``…); never the value."""
    name = type(value).__name__
    return _YAML_TYPE_NAMES.get(name, name)


def render_path(path: NodePath) -> str:
    """``("requires_env", 2, "secret")`` → ``requires_env[2].secret``."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, str):
            out += f".{part}" if out else part
        else:
            out += f"[<{yaml_type_name(part)} key>]"
    return out


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
    """A composed document: the root value (``None`` for an empty stream) and node lines.

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


def decode_yaml(
    data: bytes, path: str, *, error: type[FileError], kind: str, max_bytes: int
) -> str:
    """Check the size and encoding of YAML bytes and return the text (UTF-8, BOM dropped)."""
    if len(data) > max_bytes:
        raise error(path, f"{kind} is larger than {max_bytes} bytes ({len(data)} bytes)")
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
    mapping: bool
    key: object = None
    expecting_key: bool = True
    key_lines: dict[Any, int] = field(default_factory=dict)


_NO_ROOT = object()
_NODE_EVENTS = (yaml.ScalarEvent, yaml.CollectionStartEvent)
_END_EVENTS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class _Composer:
    """Builds plain values from parser events, refusing what a manifest must not hold."""

    def __init__(self, path: str, error: type[FileError], kind: str) -> None:
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
        get_event = loader.get_event
        documents = 0
        while True:
            event = get_event()
            line: int = event.start_mark.line + 1
            if isinstance(event, _NODE_EVENTS):  # the common case first
                self.node(event, line)
            elif isinstance(event, _END_EVENTS):
                self.stack.pop()
            elif isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise self.fail(f"a {self.kind} must be a single YAML document", line)
            elif isinstance(event, yaml.AliasEvent):
                raise self.fail(_NO_ALIASES.format(kind=self.kind), line)
            elif isinstance(event, yaml.StreamEndEvent):
                break
        if self.root is _NO_ROOT:
            return Document(root=None, lines={}, empty=True)
        return Document(root=self.root, lines=self.lines)

    def node(self, event: yaml.ScalarEvent | yaml.CollectionStartEvent, line: int) -> None:
        top = self.stack[-1] if self.stack else None
        is_key = top is not None and top.mapping and top.expecting_key
        if top is None:
            here: NodePath = ()
        elif is_key:
            here = top.path
        elif top.mapping:
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
                self.place(top, value, here, line)
            return
        if is_key:
            raise self.fail("mapping keys must be plain scalars", line, here)
        is_map = isinstance(event, yaml.MappingStartEvent)
        if event.tag not in (None, "!", _MAP if is_map else _SEQ):
            raise self.fail(
                f"YAML tags other than {_ALLOWED_TAGS_TEXT} are not allowed", line, here
            )
        container: dict[Any, Any] | list[object] = {} if is_map else []
        self.place(top, container, here, line)
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(f"nesting is deeper than {MAX_DEPTH} levels", line, here)
        self.stack.append(_Frame(container=container, path=here, mapping=is_map))

    def place(self, top: _Frame | None, value: object, here: NodePath, line: int) -> None:
        """Attach a value (at path ``here``) under the current container; record its line."""
        if top is None:
            self.root = value
        elif top.mapping:
            line = top.key_lines[top.key]
            top.container[top.key] = value  # type: ignore[call-overload]
            top.expecting_key = True
        else:
            top.container.append(value)  # type: ignore[union-attr]
        self.lines[here] = line

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


def _redact(text: str) -> str:
    return _QUOTED.sub("'…'", text)


def _failure(exc: Exception, path: str, error: type[FileError], text: str = "") -> FileError:
    """The typed error for a parser failure, built from its position and redacted words only.

    A tab where the parser stopped (YAML indents with spaces only) is named as a
    tab, with its line and column: the parser's own words ("found character that
    cannot start any token") do not say which character.
    """
    if isinstance(exc, RecursionError):
        return error(path, f"nesting is deeper than {MAX_DEPTH} levels")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        index = getattr(mark, "index", -1)
        if mark is not None and 0 <= index < len(text) and text[index] == "\t":
            return error(
                path,
                f"invalid YAML: a tab character at column {mark.column + 1} "
                "(YAML indents with spaces, never tabs)",
                line=mark.line + 1,
            )
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
    data: bytes, path: str, *, error: type[FileError], kind: str, max_bytes: int
) -> Document:
    """Decode and compose YAML bytes; raise ``error`` on anything unreadable.

    ``kind`` names the file in messages ("manifest", "config", "catalog");
    ``max_bytes`` is its size limit.
    """
    text = decode_yaml(data, path, error=error, kind=kind, max_bytes=max_bytes)
    loader = _loader_class()(text)
    try:
        return _Composer(path, error, kind).run(loader)
    except (RecursionError, yaml.YAMLError) as exc:  # the parser's error holds the text
        failure = _failure(exc, path, error, text)
    finally:
        loader.dispose()
    raise failure  # outside the handler: the error has no __context__


def locate(doc: Document, loc: tuple[int | str, ...]) -> tuple[str, int | None]:
    """The field path and line for a schema error's location in ``doc``.

    The line is that of the deepest node that exists. When the location goes
    on into a scalar (a bare-string entry checked as ``.name``, a union's
    branch), the field stops at the scalar: ``requires_env[3]`` rather than
    ``requires_env[3].name``.
    """
    node: object = doc.root
    depth = 0
    for part in loc:
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_list or (isinstance(node, dict) and part in node)):
            break
        node = node[part]  # type: ignore[index]
        depth += 1
    shown = loc if isinstance(node, (dict, list)) else loc[:depth]
    return render_path(shown), doc.lines.get(tuple(loc[:depth]))


def validation_error(
    exc: pydantic.ValidationError,
    doc: Document,
    path: str,
    error: type[E],
    describe: Callable[[ErrorDetails], tuple[tuple[int | str, ...], str]] | None = None,
) -> E:
    """A schema's problems in ``doc`` as one ``error``: the first by line, the rest in ``more``.

    ``describe`` gives an error's location and message (default: pydantic's
    location and message, which never hold the input); it may read the
    input's type, never put the value in the message. The caller raises the
    error outside its ``except`` so it carries no pydantic context (that
    holds the input).
    """
    errors = exc.errors(include_url=False, include_input=describe is not None)
    located = []
    for err in errors:
        loc, message = describe(err) if describe is not None else (tuple(err["loc"]), err["msg"])
        where, line = locate(doc, loc)
        located.append((line if line is not None else 0, where, line, message))
    located.sort(key=lambda item: item[0])  # the earliest problem in the file first
    each = [
        error(path, message, line=line, field=where or "<root>")
        for _, where, line, message in located
    ]
    first = each[0]
    return error(path, first.message, line=first.line, field=first.field, more=each[1:])
