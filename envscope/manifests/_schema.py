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

The YAML is read by ``_yaml`` (safe, no aliases, depth ≤ 64, no duplicate
keys, UTF-8, ≤ 256 KiB) and validated here with pydantic in strict mode (no
coercion: ``secret: "yes"`` is an error; unknown fields are ignored). Every
failure is a ``ManifestError`` naming the file, the line where known and the
field path (``requires_env[2].secret``); no message repeats a value. Neither
PyYAML nor pydantic is imported until the first ``parse_manifest``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envscope._inputs import valid_name
from envscope.errors import ManifestError
from envscope.policy._declarations import has_secret_suffix

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from envscope.files._yaml import Document

__all__ = [
    "MAX_MANIFEST_BYTES",
    "Manifest",
    "ManifestEntry",
    "UnknownKey",
    "env_name_problem",
    "parse_manifest",
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
        if not self.counts:
            return False
        if self.secret is not None:
            return self.secret
        return has_secret_suffix(self.name)


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key the schema does not know that is a near miss of one it does (a typo)."""

    field: str  # where: ``secert`` at the top, ``requires_env[2].secert`` in an entry
    line: int | None
    nearest: str  # the known key it is nearest to

    @property
    def message(self) -> str:
        """What a warning says: the key, what it is near, and that it is not read."""
        return f"unknown key (did you mean {self.nearest!r}?): not read"


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated manifest."""

    path: str
    name: str | None
    kind: str | None
    entries: tuple[ManifestEntry, ...]
    kind_line: int | None = None  # where ``kind`` is (``_counting`` decides what it means)
    unknown: tuple[UnknownKey, ...] = ()  # near misses of known keys, in the file's order


ENV_NAME_PATTERN = (
    "^[^=\x00\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$"
)
"""``env_name_problem`` as a JSON Schema pattern (the shipped ``plugin.schema.json``): not
empty, no ``=``, no NUL, no character ``str.isspace`` calls whitespace (listed one by one,
so a validator's own ``\\s`` does not decide). A test pins the two to each other."""

FLAGS_DISAGREE: dict[str, Any] = {
    "not": {
        "anyOf": [
            {
                "properties": {"secret": {"const": a}, "password": {"const": not a}},
                "required": ["secret", "password"],
            }
            for a in (True, False)
        ]
    }
}
"""The entry rule "secret and password agree" as a JSON Schema constraint."""


def env_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an environment variable name, or None when it can.

    envscope's one name rule (``valid_name``: not empty, no ``=``, no NUL) plus
    one stricter rule of the manifest format: no whitespace (a manifest names
    variables a plugin reads; whitespace there is a typo, not a name).
    """
    if valid_name(name) and not any(char.isspace() for char in name):
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
def _validator() -> Callable[[Document, str], Manifest]:
    """Build the pydantic models on first use (keeps ``import envscope`` free of pydantic)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
    from pydantic_core import PydanticCustomError

    config = ConfigDict(strict=True, extra="ignore", frozen=True)

    class EnvEntry(BaseModel):
        model_config = ConfigDict(
            strict=True, extra="ignore", frozen=True, json_schema_extra=FLAGS_DISAGREE
        )

        name: str = Field(json_schema_extra={"pattern": ENV_NAME_PATTERN})
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
        kind: str | None = Field(
            default=None,
            description=(
                "Under <home>/plugins/platforms/ or the bundled root every manifest declares "
                "its secrets; a flat <home>/plugins/NAME/ manifest declares them only with "
                "kind: platform. A near miss (Platform, platfrom, platforms) is read as "
                "platform and reported as a problem; any other kind declares nothing."
            ),
        )
        requires_env: list[EnvEntry] | None = None
        optional_env: list[EnvEntry] | None = None

    top_keys = tuple(ManifestModel.model_fields)
    entry_keys = tuple(EnvEntry.model_fields)

    def validate(doc: Document, path: str) -> Manifest:
        model = ManifestModel.model_validate(doc.root)
        root = doc.root if isinstance(doc.root, dict) else {}
        unknown = _near_misses(root, top_keys, (), doc)
        for section in ENV_SECTIONS:
            for index, raw in enumerate(root.get(section) or ()):
                unknown.extend(_near_misses(raw, entry_keys, (section, index), doc))
        entries = tuple(
            ManifestEntry(
                entry.name,
                f"{section}[{index}]",
                doc.lines.get((section, index)),
                entry.password if entry.secret is None else entry.secret,
                entry.category,
            )
            for section in ENV_SECTIONS
            for index, entry in enumerate(getattr(model, section) or ())
        )
        unknown.sort(key=lambda u: u.line or 0)
        return Manifest(
            path, model.name, model.kind, entries, doc.lines.get(("kind",)), tuple(unknown)
        )

    return validate


def _spelling(key: str) -> str:
    return key.lower().replace("-", "_").replace(" ", "_")


def _near_misses(
    raw: object, known: tuple[str, ...], at: tuple[int | str, ...], doc: Document
) -> list[UnknownKey]:
    """The keys of the mapping ``raw`` that are no key of ``known`` but near one.

    Near: the same but for case, ``-`` or a space for ``_`` (``Requires-Env``),
    or close in letters (``difflib``: ``secert``, ``require_env``). A key far from
    every known one is another tool's field (``version``, ``icon``): not a warning.
    """
    import difflib

    from envscope.files._yaml import render_path

    if not isinstance(raw, dict):
        return []
    found = []
    for key in raw:
        if not isinstance(key, str) or key in known:
            continue
        same = [k for k in known if _spelling(k) == _spelling(key)]
        near = same or difflib.get_close_matches(_spelling(key), known, n=1, cutoff=0.75)
        if near:
            where = (*at, key)
            found.append(UnknownKey(render_path(where), doc.lines.get(where), near[0]))
    return found


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


def _describe(err: ErrorDetails) -> tuple[tuple[int | str, ...], str]:
    """A manifest schema error's location and message (the input's type, never its value)."""
    from envscope.files._yaml import yaml_type_name

    loc = tuple(err["loc"])
    kind = err["type"]
    if kind == "flag_conflict":
        loc = (*loc, "password")
    if kind in _OWN_MESSAGES:
        return loc, err["msg"]
    template = _MESSAGES.get(kind, "is invalid ({kind})")
    return loc, template.format(got=yaml_type_name(err.get("input")), kind=kind)


def parse_manifest(data: bytes, path: str) -> Manifest:
    """Parse and validate manifest bytes read from ``path``.

    Raises ``ManifestError`` (naming ``path``, the line where known and the
    field path) for anything unreadable, unparsable or invalid.
    """
    from pydantic import ValidationError

    from envscope.files._yaml import read_document, validation_error, yaml_type_name

    path = str(path)
    doc = read_document(
        bytes(data), path, error=ManifestError, kind="manifest", max_bytes=MAX_MANIFEST_BYTES
    )
    if doc.empty:
        raise ManifestError(path, "a manifest must be a mapping; the file has no YAML content")
    if not isinstance(doc.root, dict):
        raise ManifestError(
            path,
            f"a manifest must be a mapping, got {yaml_type_name(doc.root)}",
            line=doc.lines.get(()),
        )
    try:
        return _validator()(doc, path)
    except ValidationError as exc:  # it holds the input values: keep it out of the chain
        failure = validation_error(exc, doc, path, ManifestError, _describe)
    raise failure  # outside the handler: the error has no __context__
