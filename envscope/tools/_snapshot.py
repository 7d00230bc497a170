"""Reading a saved snapshot for ``envscope diff``: bytes in, a checked mapping out.

A snapshot is input from outside (a CI artefact, stdin): every field ``diff``
reads is checked before it is used, and anything else is a ``SnapshotError``
naming the file and the field (``keys.NAME.fingerprint``), never a value.
JSON nested deeper than the parser can follow, duplicate object keys and
non-UTF JSON text are refused too. Pure: the caller reads the bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from envscope.errors import SnapshotError
from envscope.files._json import decode_json, shown_key

__all__ = ["MAX_SNAPSHOT_BYTES", "parse_snapshot"]

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
_TEXT_FIELDS = ("action", "stage", "reason")
_ORIGIN_FIELDS: dict[str, type] = {"kind": str, "detail": str}  # version 2: an object or null
_ORIGIN_OPTIONAL: dict[str, type] = {"path": str, "line": int}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)  # fmt: skip


def _decode(data: bytes, label: str) -> object:
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(label, f"larger than {MAX_SNAPSHOT_BYTES} bytes")
    value, problem, line = decode_json(data)
    if problem is not None:
        raise SnapshotError(label, problem + (f" (line {line})" if line else ""))
    return value


def _field(mapping: Mapping[str, Any], name: str, label: str, where: str) -> Any:
    if name not in mapping:
        raise SnapshotError(label, "missing", field=f"{where}{name}")
    return mapping[name]


def _optional(info: Mapping[str, Any], field: str, kind: type, label: str, where: str) -> None:
    value = info.get(field)
    if value is not None and type(value) is not kind:
        what = "a string" if kind is str else "a number"
        got = _kind(value)
        raise SnapshotError(label, f"must be {what} or null, got {got}", field=f"{where}.{field}")


def _check_origin(info: Mapping[str, Any], label: str, where: str, version: int) -> None:
    """Version 1: a string or null; version 2: null or ``{kind, detail, path, line}``."""
    origin = info.get("origin")
    if version == 1 or origin is None:
        _optional(info, "origin", str, label, where)
        return
    where = f"{where}.origin"
    if not isinstance(origin, dict):
        raise SnapshotError(label, f"must be an object or null, got {_kind(origin)}", field=where)
    for field, kind in _ORIGIN_FIELDS.items():
        if type(_field(origin, field, label, f"{where}.")) is not kind:
            got = _kind(origin[field])
            raise SnapshotError(label, f"must be a string, got {got}", field=f"{where}.{field}")
    for field, kind in _ORIGIN_OPTIONAL.items():
        _optional(origin, field, kind, label, where)


def _check_key(name: str, info: object, label: str, version: int) -> None:
    where = f"keys.{shown_key(name)}"
    if not isinstance(info, dict):
        raise SnapshotError(label, f"must be an object, got {_kind(info)}", field=where)
    for field in _TEXT_FIELDS:
        if not isinstance(_field(info, field, label, f"{where}."), str):
            got = _kind(info[field])
            raise SnapshotError(label, f"must be a string, got {got}", field=f"{where}.{field}")
    _check_origin(info, label, where, version)
    _optional(info, "fingerprint", str, label, where)


def parse_snapshot(data: bytes, label: str, versions: Collection[int]) -> dict[str, Any]:
    """The snapshot in ``data`` (the bytes of ``label``) with every field diff reads checked."""
    snap = _decode(data, label)
    if not isinstance(snap, dict):
        raise SnapshotError(label, f"not an envscope snapshot: the top level is {_kind(snap)}")
    found = snap.get("envscope_snapshot")
    if type(found) is not int or found not in versions:
        shown = " or ".join(str(v) for v in sorted(versions))
        raise SnapshotError(label, f"not an envscope snapshot (version {shown})")
    child = _field(snap, "child", label, "")
    if not isinstance(child, list):
        raise SnapshotError(label, f"must be a list, got {_kind(child)}", field="child")
    for index, name in enumerate(child):
        if not isinstance(name, str):
            raise SnapshotError(
                label, f"must be a string, got {_kind(name)}", field=f"child[{index}]"
            )
    keys = _field(snap, "keys", label, "")
    if not isinstance(keys, dict):
        raise SnapshotError(label, f"must be an object, got {_kind(keys)}", field="keys")
    for name, info in keys.items():
        _check_key(name, info, label, found)
    return snap
