"""Reading a saved snapshot for ``envscope diff``: bytes in, a checked mapping out.

A snapshot is input from outside (a CI artefact, stdin). It is checked whole
against one pydantic model per format version (``snapshot_models``), the
same models ``snapshot.schema.json`` is generated from: what the schema
refuses the reader refuses, and the reverse. Every field the writer writes is
required (a field a version added later, ``names_fold``, is optional); fields
a newer writer may add are left alone where the schema leaves them. A failure
is a ``SnapshotError`` naming the file and the field (``keys.NAME.fingerprint``),
never a value. JSON nested deeper than the parser can follow, duplicate
object keys and non-UTF JSON text are refused too. Pure: the caller reads the
bytes. pydantic is imported on the first read.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from envscope.errors import SnapshotError
from envscope.files._json import decode_json, shown_key

if TYPE_CHECKING:
    import pydantic
    from pydantic_core import ErrorDetails

__all__ = ["MAX_SNAPSHOT_BYTES", "parse_snapshot", "snapshot_models"]

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
HEX16 = "^[0-9a-f]{16}$"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)  # fmt: skip


def _integral(value: object) -> object:
    """A JSON number with no fraction (``3.0``) as the integer it is: JSON Schema's rule."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


@functools.cache
def snapshot_models() -> dict[int, type[pydantic.BaseModel]]:
    """The model of each snapshot format version ``diff`` reads (built on first use)."""
    from typing import Annotated, Literal

    from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

    from envscope.policy._reasons import Action, Stage
    from envscope.policy.surfaces import Surface

    loose = ConfigDict(strict=True, extra="ignore", frozen=True)
    closed = ConfigDict(strict=True, extra="forbid", frozen=True)
    LineNumber = Annotated[int, Field(ge=1), BeforeValidator(_integral)]
    Hex16 = Annotated[str, Field(pattern=HEX16)]
    # An enum's field takes the JSON text of its value (strict would take only the member).
    lax = Field(strict=False)

    class Origin(BaseModel):
        """Where the rule or value came from."""

        model_config = closed
        kind: str = Field(
            pattern="^[a-z-]+$",
            description="catalog, manifest, launch-dotenv, secret-source, managed, scope, ...",
        )
        detail: str
        path: str | None = Field(description="relative to the working directory when under it")
        line: LineNumber | None

    class Decision(BaseModel):
        """The final decision for one key the build saw."""

        model_config = loose
        in_child: bool
        action: Action = lax
        stage: Stage = lax
        reason: str = Field(pattern="^[a-z0-9-]+$")
        origin: Origin | None
        fingerprint: Hex16 | None = Field(
            description="a keyed BLAKE2b of the name and value (16 hex characters), or null"
        )

    class DecisionV1(Decision):
        """A version 1 decision: the origin is one line of text."""

        origin: str | None  # type: ignore[assignment]

    class Policy(BaseModel):
        model_config = loose
        complete: bool = Field(
            description="false: a manifest scan was partial and the policy fails closed"
        )
        problems: list[str] = Field(description="each as path:line: field: message")

    class WarningRecord(BaseModel):
        """A kept variable that looks like a credential, or an injection vector: never a value."""

        model_config = closed
        key: str
        kind: str = Field(
            description="value-shape:FORMAT, credential-suffix, injection-vector, ..."
        )
        message: str

    class Filtered(BaseModel):
        """Only in explain --json with --key or --only: the filter (diff refuses a part)."""

        model_config = closed
        key: list[str]
        only: Literal["kept", "removed"] | None

    class SnapshotV2(BaseModel):
        """What `envscope snapshot` writes and `envscope explain --json` prints."""

        model_config = loose
        envscope_snapshot: Annotated[Literal[2], BeforeValidator(_integral)]
        fingerprint_key_id: Hex16 | None = Field(
            description="16 hex characters naming the fingerprint key; null when there is none"
        )
        home: str = Field(description="the config's name for the home, else its path")
        surface: Surface = lax
        routed: bool
        names_fold: bool = Field(
            default=False,
            description="names fold (Windows): case twins are one variable; else each spelling "
            "is its own (POSIX)",
        )
        policy: Policy
        child: list[str] = Field(description="the keys the child gets, sorted")
        keys: dict[str, Decision] = Field(description="one final decision per key the build saw")
        warnings: list[WarningRecord]
        filtered: Filtered | None = None
        values: dict[str, str] | None = Field(
            default=None,
            description="only with --show-values: the child's env by its exact spellings, "
            "protected values masked as ********",
        )

    class SnapshotV1(BaseModel):
        """Format version 1, still read by `envscope diff`: origins and warnings are text."""

        model_config = loose
        envscope_snapshot: Annotated[Literal[1], BeforeValidator(_integral)]
        fingerprint_key_id: Hex16 | None = None
        home: str
        surface: Surface = lax
        routed: bool
        policy: Policy
        child: list[str]
        keys: dict[str, DecisionV1]
        warnings: list[str]

    return {1: SnapshotV1, 2: SnapshotV2}


def _nullable(models: Collection[type[pydantic.BaseModel]]) -> frozenset[str]:
    """The names of the fields that take null, in any model reachable from ``models``."""
    seen: set[type[pydantic.BaseModel]] = set()
    names: set[str] = set()
    todo = list(models)
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            union = typing.get_origin(info.annotation) in (typing.Union, types.UnionType)
            if union and type(None) in typing.get_args(info.annotation):
                names.add(name)
            todo.extend(_models_in(info.annotation))
    return frozenset(names)


def _models_in(annotation: object) -> list[type[pydantic.BaseModel]]:
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


_EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "a number",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _where(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as the messages' field path: ``keys.NAME.origin``, ``child[1]``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + shown_key(part)
    return text


def _message(err: ErrorDetails, nullable: frozenset[str]) -> str:
    """One schema failure in words: what was expected and the input's type, never its value."""
    kind, ctx, loc = err["type"], err.get("ctx") or {}, err["loc"]
    if kind == "missing":
        return "missing"
    if kind in _EXPECTED:
        null = " or null" if loc and loc[-1] in nullable else ""
        return f"must be {_EXPECTED[kind]}{null}, got {_kind(err.get('input'))}"
    if kind in ("enum", "literal_error"):
        return f"must be one of {ctx.get('expected')}, got {_kind(err.get('input'))}"
    if kind == "string_pattern_mismatch":
        return f"does not match {ctx.get('pattern')}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}"
    if kind == "extra_forbidden":
        return "is not a field of this object"
    return f"is invalid ({kind})"


def _decode(data: bytes, label: str) -> object:
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(label, f"larger than {MAX_SNAPSHOT_BYTES} bytes")
    value, problem, line = decode_json(data)
    if problem is not None:
        raise SnapshotError(label, problem + (f" (line {line})" if line else ""))
    return value


def parse_snapshot(data: bytes, label: str, versions: Collection[int]) -> dict[str, Any]:
    """The snapshot in ``data`` (the bytes of ``label``), checked whole against its version.

    Raises ``SnapshotError`` naming ``label`` and the first failing field;
    the error's ``more`` holds the others.
    """
    from pydantic import ValidationError

    snap = _decode(data, label)
    if not isinstance(snap, Mapping):
        raise SnapshotError(label, f"not an envscope snapshot: the top level is {_kind(snap)}")
    found = _integral(snap.get("envscope_snapshot"))
    models = snapshot_models()
    if type(found) is not int or found not in versions or found not in models:
        shown = " or ".join(str(v) for v in sorted(versions))
        raise SnapshotError(label, f"not an envscope snapshot (version {shown})")
    try:
        models[found].model_validate(snap)
    except ValidationError as exc:  # it holds the input values: keep it out of the chain
        nullable = _nullable(models.values())
        each = [
            SnapshotError(label, _message(err, nullable), field=_where(tuple(err["loc"])))
            for err in exc.errors(include_url=False)
        ]
        failure = SnapshotError(label, each[0].message, field=each[0].field, more=each[1:])
    else:
        return dict(snap)
    raise failure  # outside the handler: the error has no __context__
