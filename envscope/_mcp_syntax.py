"""The syntax inside an MCP client config's values: ``${…}`` per client, JSON with comments.

One interpolation function per syntax (``expand_vscode``, ``expand_shell_default``,
``expand_braces``; Codex and goose have none) resolves a value against the
mapping it is given; an unset or invalid reference is a ``ConfigFileError``
naming the file and the field (``ConfigField``), showing the reference's kind
and name only (``shown``), never a default or a value. ``strip_jsonc`` blanks
the comments and trailing commas of VS Code's JSON with comments, keeping line
numbers. The format readers (``_mcp_formats``) and ``mcp``'s loader call these.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from envscope._inputs import valid_name
from envscope.errors import ConfigFileError

__all__ = [
    "ConfigField",
    "Expand",
    "expand_braces",
    "expand_shell_default",
    "expand_vscode",
    "references",
    "shown",
    "strip_jsonc",
]


@dataclass(frozen=True, slots=True)
class ConfigField:
    """Where a value is: the config file and the field path (for errors)."""

    path: str
    field: str
    source: str = "the host environment"  # what a ${NAME} is read from (for errors)

    def error(self, message: str) -> ConfigFileError:
        return ConfigFileError(self.path, message, field=self.field)

    def child(self, name: str) -> ConfigField:
        return ConfigField(self.path, f"{self.field}.{name}", self.source)

    def at(self, field_path: str) -> ConfigField:
        """Another field of the same file, read from the same source."""
        return ConfigField(self.path, field_path, self.source)


Expand = Callable[[str, Mapping[str, str], ConfigField], str]


# -- interpolation: one function per syntax ---------------------------------------


def references(value: str) -> list[tuple[int, int, str]]:
    """``(start, end, inner)`` of each ``${inner}`` left to right, in linear time.

    An inner text runs to the first ``}``; past the last ``}`` nothing is a
    reference (so a value of many unclosed ``${`` is scanned once).
    """
    found = []
    start = value.find("${")
    while start != -1:
        close = value.find("}", start + 2)
        if close == -1:
            break
        found.append((start, close + 1, value[start + 2 : close]))
        start = value.find("${", close + 1)
    return found


_KINDS = ("env", "input", "config", "command")  # VS Code's ${kind:…} prefixes


def shown(inner: str) -> str:
    """A reference as an error may show it: its kind and name, never a default or the rest.

    ``${NAME:-tok}`` shows as ``${NAME…}``, ``${env:NAME:=tok}`` as
    ``${env:NAME…}``: what follows the name (an operator, a default someone
    typed a token into) is never echoed. The editor's other kinds
    (``${config:…}``, ``${input:…}``, ``${command:…}``) show no more than
    their kind.
    """
    kind, sep, body = inner.partition(":")
    prefix = f"{kind}:" if sep and kind in _KINDS else ""
    if prefix and kind != "env":
        return "${" + prefix + "…}"
    if not prefix:
        body = inner
    end = 0
    while end < len(body) and (body[end].isascii() and (body[end].isalnum() or body[end] == "_")):
        end += 1
    return "${" + prefix + body[:end] + ("…" if end < len(body) else "") + "}"


def _substitute(value: str, at: ConfigField, resolve: Callable[[str], str]) -> str:
    if "${" not in value:
        return value
    out: list[str] = []
    cursor = 0
    for start, end, inner in references(value):
        if "${" in inner:  # ${A:-${B}/x}: the client reads the first "}" as the end
            raise at.error(
                f"{shown(inner)} holds another ${{…}} reference, which the client does not "
                "resolve inside a reference: write the default out"
            )
        out.append(value[cursor:start])
        out.append(resolve(inner))
        cursor = end
    out.append(value[cursor:])
    return "".join(out)


def _lookup(name: str, environ: Mapping[str, str], at: ConfigField, inner: str) -> str:
    if not valid_name(name):
        raise at.error(f"{shown(inner)} is not a valid variable reference")
    found = environ.get(name)
    if found is None:
        raise at.error(f"{shown(inner)} is not set in {at.source}")
    return found


def expand_braces(value: str, environ: Mapping[str, str], at: ConfigField) -> str:
    """Agent-host YAML: ``${NAME}`` is ``environ[NAME]``; unset or invalid is an error."""
    return _substitute(value, at, lambda inner: _lookup(inner, environ, at, inner))


def expand_shell_default(value: str, environ: Mapping[str, str], at: ConfigField) -> str:
    """Claude Code: ``${NAME}``, and ``${NAME:-default}`` (the default when unset or empty)."""

    def one(inner: str) -> str:
        name, sep, default = inner.partition(":-")
        if sep:
            if not valid_name(name) or ":" in name:
                raise at.error(f"{shown(inner)} is not a valid variable reference")
            return environ.get(name) or default
        if ":" in name:
            raise at.error(f"{shown(inner)} is not a valid variable reference")
        return _lookup(name, environ, at, inner)

    return _substitute(value, at, one)


def expand_vscode(
    value: str, environ: Mapping[str, str], at: ConfigField, *, workspace: str | None
) -> str:
    """VS Code and Cursor: ``${env:NAME}``, ``${workspaceFolder}``, ``${userHome}`` (``HOME``),
    ``${pathSeparator}`` (``${/}``); ``${input:ID}`` is an error.

    A prompted input (``${input:ID}``) and the editor's other variables
    (``${config:…}``, ``${command:…}``) exist only inside the editor: a host
    cannot resolve them, so each is an error naming the field.
    """

    def one(inner: str) -> str:
        kind, sep, name = inner.partition(":")
        if sep and kind == "env":
            return _lookup(name, environ, at, inner)
        if sep and kind == "input":
            raise at.error(
                f"{shown(inner)} is prompted by the editor and cannot be resolved by a "
                "host; put the value (or ${env:NAME}) in the config"
            )
        if not sep and inner == "userHome":
            return _lookup("HOME", environ, at, "HOME")
        if not sep and inner in ("pathSeparator", "/"):
            return os.sep
        if not sep and inner == "workspaceFolder":
            if workspace is None:
                raise at.error(
                    "${workspaceFolder} is unknown: the config is not in a .vscode or .cursor "
                    "directory (pass workspace=...)"
                )
            return workspace
        raise at.error(f"{shown(inner)} cannot be resolved outside the editor")

    return _substitute(value, at, one)


# -- JSON with comments --------------------------------------------------------------


def strip_jsonc(text: str) -> str | None:
    """JSON text with ``//`` and ``/* */`` comments and trailing commas blanked, in one pass.

    VS Code writes its ``mcp.json`` as JSON with comments. Every removed
    character becomes a blank (line ends stay), so the JSON parser's line
    numbers are the file's. ``None`` for an unterminated block comment.
    """
    out = list(text)
    in_string = False
    pending = -1  # the index of a comma that may be trailing (one that follows a value)
    last = ""  # the last significant character outside strings and comments
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            in_string = ch != '"'
        elif ch == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end == -1 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        elif ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end == -1:
                return None
            for j in range(i, end + 2):
                if out[j] not in "\r\n":
                    out[j] = " "
            i = end + 2
            continue
        elif ch == ",":
            pending = i if last not in ("", "{", "[", ",") else -1
            last = ch
        elif not ch.isspace():
            if ch in "}]" and pending != -1:
                out[pending] = " "
            pending = -1
            in_string = ch == '"'
            last = ch
        i += 1
    return "".join(out)
