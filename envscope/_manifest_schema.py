"""Plugin manifest schema: ``parse_manifest(data, path)`` → a frozen ``Manifest``.

A manifest (``plugin.yaml``) declares the environment a plugin needs::

    name: chatx
    kind: platform
    requires_env:
      - CHATX_BOT_TOKEN                 # bare name
      - name: CHATX_SIGNING_SECRET      # mapping entry
        description: Signing secret
        secret: true                    # or ``password: true``
        category: messaging             # only none/messaging count toward secrets
    optional_env: []

The YAML is read by ``_manifest_yaml`` (safe, no aliases, depth ≤ 64, no
duplicate keys, UTF-8, ≤ 256 KiB) and validated here with pydantic in strict
mode (no coercion: ``secret: "yes"`` is an error; unknown fields are ignored).
Every failure is a ``ManifestError`` naming the file, the line where known and
the field path (``requires_env[2].secret``); no message repeats a value.

A well-formed document is validated by ``_fast_check``, which accepts only what
the models accept, with the same result; anything else (every error included)
goes to the models. ``read_manifest`` is ``parse_manifest`` without the frozen
objects, for the scan. Neither PyYAML nor pydantic is imported until the first
``parse_manifest``, and pydantic only once a document needs the models.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from envscope._declarations import has_secret_suffix
from envscope.errors import ManifestError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from envscope._manifest_yaml import Document

__all__ = [
    "MAX_MANIFEST_BYTES",
    "Manifest",
    "ManifestEntry",
    "entry_is_secret",
    "parse_manifest",
    "read_manifest",
]

MAX_MANIFEST_BYTES = 256 * 1024

ENV_SECTIONS: tuple[str, ...] = ("requires_env", "optional_env")
COUNTED_CATEGORIES: frozenset[str | None] = frozenset({None, "messaging"})
PLATFORM_KIND = "platform"


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ``requires_env``/``optional_env`` entry."""

    name: str
    field: str  # e.g. "requires_env[2]"
    line: int | None = None
    secret: bool | None = None  # explicit secret/password flag, None when absent
    category: str | None = None

    @property
    def counts(self) -> bool:
        """Only entries with no category or category ``messaging`` count toward secrets."""
        return self.category in COUNTED_CATEGORIES

    @property
    def is_secret(self) -> bool:
        """Explicitly secret, or secret-suffixed and not ``secret: false`` (counting entries)."""
        return entry_is_secret(self.name, self.secret, self.category)


def entry_is_secret(name: str, secret: bool | None, category: str | None) -> bool:
    """``ManifestEntry.is_secret`` for an entry's parts (the scan reads ``RawEntry`` tuples)."""
    if category not in COUNTED_CATEGORIES:
        return False
    if secret is not None:
        return secret
    return has_secret_suffix(name)


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated manifest."""

    path: str
    name: str | None
    kind: str | None
    entries: tuple[ManifestEntry, ...]

    @property
    def is_platform(self) -> bool:
        """True when the manifest says ``kind: platform``."""
        return self.kind == PLATFORM_KIND


class _Entry(NamedTuple):
    name: str
    secret: bool | None
    category: str | None


_EntryParts = tuple[str, bool | None, str | None]  # an _Entry, or a plain tuple of its parts


class _Checked(NamedTuple):
    name: str | None
    kind: str | None
    sections: Mapping[str, Sequence[_EntryParts]]


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


def render_path(path: tuple[object, ...]) -> str:
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


# One search for what ``env_name_problem`` refuses: ``=``, NUL, or a character
# ``str.isspace`` calls whitespace (re's ``\s`` is that same Unicode test).
_NOT_IN_A_NAME = re.compile(r"[=\x00\s]")


def env_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an environment variable name, or None when it can."""
    if name and _NOT_IN_A_NAME.search(name) is None:
        return None
    if not name:
        return "is empty"
    if "=" in name:
        return "contains '='"
    if "\x00" in name:
        return "contains a NUL character"
    if any(char.isspace() for char in name):
        return "contains whitespace"
    return None


@functools.cache
def _validator() -> Callable[[object], _Checked]:
    """Build the pydantic models on first use (keeps ``import envscope`` free of pydantic)."""
    from pydantic import BaseModel, ConfigDict, field_validator, model_validator
    from pydantic_core import PydanticCustomError

    config = ConfigDict(strict=True, extra="ignore", frozen=True)

    class EnvEntry(BaseModel):
        model_config = config

        name: str
        description: str | None = None
        url: str | None = None
        secret: bool | None = None
        password: bool | None = None
        prompt: str | None = None
        category: str | None = None

        @model_validator(mode="before")
        @classmethod
        def _bare_name(cls, data: object) -> object:
            return {"name": data} if isinstance(data, str) else data

        @field_validator("name")
        @classmethod
        def _valid_name(cls, value: str) -> str:
            problem = env_name_problem(value)
            if problem is not None:
                raise PydanticCustomError(
                    "env_name", f"is not a valid environment variable name: it {problem}"
                )
            return value

        @model_validator(mode="after")
        def _flags_agree(self) -> EnvEntry:
            if None not in (self.secret, self.password) and self.secret != self.password:
                raise PydanticCustomError(
                    "flag_conflict", "secret and password disagree (password is secret's alias)"
                )
            return self

    class ManifestModel(BaseModel):
        model_config = config

        name: str | None = None
        kind: str | None = None
        requires_env: list[EnvEntry] | None = None
        optional_env: list[EnvEntry] | None = None

    def validate(doc: object) -> _Checked:
        model = ManifestModel.model_validate(doc)
        sections = {
            section: [
                _Entry(e.name, e.secret if e.secret is not None else e.password, e.category)
                for e in (getattr(model, section) or ())
            ]
            for section in ENV_SECTIONS
        }
        return _Checked(model.name, model.kind, sections)

    return validate


# The type each entry field must have when present and not null (strict: no coercion).
_ENTRY_TYPES: Mapping[object, type] = {
    "name": str,
    "description": str,
    "url": str,
    "prompt": str,
    "category": str,
    "secret": bool,
    "password": bool,
}


def _fine_name(name: str) -> bool:
    """``env_name_problem(name) is None``, with no regex for an ASCII identifier."""
    if name.isascii() and name.isidentifier():
        return True  # letters, digits and "_": no "=", NUL or whitespace
    return bool(name) and _NOT_IN_A_NAME.search(name) is None


def _fast_check(root: dict[object, object]) -> _Checked | None:
    """What the pydantic models make of a well-formed manifest; None for anything else.

    It accepts only what ``_validator()`` accepts, with the same result: exact
    ``str``/``bool``/``list``/``dict`` types (strict mode), valid names, agreeing
    flags. Any doubt returns None and the models decide (and word the error).
    """
    get = root.get
    name, kind = get("name"), get("kind")
    if (name is not None and type(name) is not str) or (kind is not None and type(kind) is not str):
        return None
    sections: dict[str, Sequence[_EntryParts]] = {}
    types = _ENTRY_TYPES
    for section in ENV_SECTIONS:
        items = get(section)
        if items is None:
            sections[section] = ()
            continue
        if type(items) is not list:
            return None
        entries: list[_EntryParts] = []
        for item in items:
            if type(item) is str:  # a bare name
                if not _fine_name(item):
                    return None
                entries.append((item, None, None))
                continue
            if type(item) is not dict:
                return None
            for key, value in item.items():
                if value is not None and key in types and type(value) is not types[key]:
                    return None
            entry_name = item.get("name")
            if entry_name is None or not _fine_name(entry_name):
                return None
            secret, password = item.get("secret"), item.get("password")
            if secret is None:
                secret = password
            elif password is not None and password is not secret:
                return None
            entries.append((entry_name, secret, item.get("category")))
        sections[section] = entries
    return _Checked(name, kind, sections)


_MESSAGES = {
    "missing": "is required",
    "string_type": "must be a string, got {got}",
    "bool_type": "must be true or false, got {got}",
    "list_type": "must be a list, got {got}",
    "model_type": "must be a name or a mapping with a name, got {got}",
    "model_attributes_type": "must be a name or a mapping with a name, got {got}",
    "dict_type": "must be a mapping, got {got}",
}
_OWN_MESSAGES = frozenset({"env_name", "flag_conflict"})


def _locate(doc: Document, loc: tuple[int | str, ...]) -> tuple[str, int | None]:
    """The field path and line for a pydantic error location in ``doc``.

    The line is that of the deepest node that exists. When the location goes
    on into a scalar (a bare-string entry checked as ``.name``), the field
    stops at the scalar: ``requires_env[3]`` rather than ``requires_env[3].name``.
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


def _error(doc: Document, path: str, errors: Sequence[ErrorDetails]) -> ManifestError:
    located = []
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] == "flag_conflict":
            loc = (*loc, "password")
        field, line = _locate(doc, loc)
        located.append((line if line is not None else 0, field, line, err))
    located.sort(key=lambda item: item[0])  # the earliest problem in the file first
    _, field, line, err = located[0]
    kind = err["type"]
    if kind in _OWN_MESSAGES:
        message = err["msg"]
    else:
        template = _MESSAGES.get(kind, "is invalid ({kind})")
        message = template.format(got=yaml_type_name(err.get("input")), kind=kind)
    if len(errors) > 1:
        more = len(errors) - 1
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return ManifestError(path, message, line=line, field=field or None)


RawEntry = tuple[str, str, int, int | None, bool | None, str | None]
"""An entry as ``read_manifest`` gives it: (name, section, index, line, secret, category)."""


def read_manifest(data: bytes, path: str) -> tuple[str | None, str | None, list[RawEntry]]:
    """``parse_manifest`` without building the frozen objects: (name, kind, entries).

    For the scan, which reads every manifest of a home: the same checks and the
    same ``ManifestError``; each entry as a ``RawEntry`` tuple.
    """
    from envscope._manifest_yaml import read_document

    path = str(path)
    doc = read_document(bytes(data), path)
    if doc.empty:
        raise ManifestError(path, "a manifest must be a mapping; the file has no YAML content")
    if not isinstance(doc.root, dict):
        raise ManifestError(
            path,
            f"a manifest must be a mapping, got {yaml_type_name(doc.root)}",
            line=doc.lines.get(()),
        )
    checked = _fast_check(doc.root)
    if checked is None:  # not the common shape: the pydantic models decide, and word the error
        checked = _validated(doc, path)
    lines = doc.lines
    entries = [
        (name, section, index, lines.get((section, index)), secret, category)
        for section in ENV_SECTIONS
        for index, (name, secret, category) in enumerate(checked.sections[section])
    ]
    return checked.name, checked.kind, entries


def _validated(doc: Document, path: str) -> _Checked:
    """The pydantic models' reading; the error is raised outside the handler (no context)."""
    from pydantic import ValidationError

    try:
        return _validator()(doc.root)
    except ValidationError as exc:  # it holds the input values: keep it out of the chain
        failure = _error(doc, path, exc.errors(include_url=False))
    raise failure


def parse_manifest(data: bytes, path: str) -> Manifest:
    """Parse and validate manifest bytes read from ``path``.

    Raises ``ManifestError`` (naming ``path``, the line where known and the
    field path) for anything unreadable, unparsable or invalid.
    """
    name, kind, raw = read_manifest(data, path)
    entries = tuple(
        ManifestEntry(entry, f"{section}[{index}]", line, secret, category)
        for entry, section, index, line, secret, category in raw
    )
    return Manifest(path=str(path), name=name, kind=kind, entries=entries)
