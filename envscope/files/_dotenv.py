"""Reading dotenv files: python-dotenv's parser, envscope's interpolation and limits.

python-dotenv's own ``dotenv_values`` interpolates ``${VAR}`` against the real
``os.environ``. envscope hosts may pass another ``environ``, so this module
parses with python-dotenv's parser and interpolates against the file itself
plus an explicit mapping the caller chooses (never silently the process).

``parse_dotenv`` is pure; ``read_dotenv`` is the one reader, used by ``Host``
(a text without ``$`` it parsed before is answered by ``DOTENV_PARSES``).

Bounded work. python-dotenv has two spots that are quadratic in hostile input;
both are closed here so a 1 MiB file cannot stall a build:

- its ``${VAR}`` expansion regex re-scans the rest of a value from every ``${``
  that has no closing ``}``. envscope resolves ``${VAR}``/``${VAR:-default}``
  with its own linear scanner (same results: see the differential property
  test in ``tests/property``).
- its unquoted-value comment stripper (``re.sub(r"\\s+#.*", ...)``) is
  quadratic in a run of blanks that is not followed by ``#``. A file whose
  long blank runs (more than ``_FREE_BLANK_RUN`` characters) add up to more than
  ``MAX_BLANK_RUN_COST`` (the sum of each run's length squared) is refused
  before parsing, naming the line. One run of 4096 blanks is still accepted.

Interpolation can also multiply text: ``B=${A}${A}``, ``C=${B}${B}``, … doubles
per line (an "expansion bomb": 30 short lines make gigabytes). The values of
one file may hold at most ``MAX_EXPANDED_CHARS`` characters in total after
interpolation; past that the file is a ``DotenvError`` naming the line. Each
``${VAR}`` lookup reads the file's values and ``environ`` in place (no copy
per value), so interpolation is linear in the file and its output.

Line numbers count ``\\r\\n``, ``\\n`` and a lone ``\\r`` as line ends, as
python-dotenv does, and point at the line where the offending binding starts
(not at blank lines before it).

Fidelity to python-dotenv's ``dotenv_values``/``load_dotenv`` on a file
(pinned by a differential property against python-dotenv itself):

- it reads a file in text mode, so every ``\\r\\n`` and lone ``\\r`` is a
  ``\\n`` before parsing, inside quoted values too; ``read_dotenv`` does the
  same (``parse_dotenv(..., universal_newlines=True)``). Text given to
  ``parse_dotenv`` directly is parsed as python-dotenv parses a stream: as is.
- a key written without ``=`` (``FOO``) has no value: it is not in the
  result, it removes an earlier ``FOO=x`` of the same file from the result,
  and ``${FOO}`` after it resolves to ``""`` (its ``:-default`` ignored)
  unless the outside environment wins the lookup (no override).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping

from envscope._inputs import valid_name
from envscope.errors import DotenvError
from envscope.files._content_memo import ContentMemo

__all__ = [
    "DOTENV_PARSES",
    "MAX_BLANK_RUN_COST",
    "MAX_DOTENV_BYTES",
    "MAX_DOTENV_LINES",
    "MAX_EXPANDED_CHARS",
    "parse_dotenv",
    "read_dotenv",
]

MAX_DOTENV_BYTES = 1024 * 1024
MAX_DOTENV_LINES = 10_000
MAX_BLANK_RUN_COST = 4096 * 4096
"""Budget for long blank runs (sum of squared lengths); see the module docstring."""
MAX_EXPANDED_CHARS = 4 * MAX_DOTENV_BYTES
"""Most characters one file's values may hold after interpolation (all values together)."""

DOTENV_PARSES: ContentMemo[tuple[tuple[str, str], ...]] = ContentMemo(64, 16 * 1024)
"""What ``read_dotenv`` parsed from a file's text with no ``$`` in it, by ``(path, text)``.

A process-wide memo (``files._content_memo``): the file is still read and its
text compared whole, only the parse is skipped; at most 64 files of at most
16 Ki characters; ``DOTENV_PARSES.clear()`` resets it. A text with a ``$`` is
parsed every time (its interpolation reads ``environ``).
"""

_FREE_BLANK_RUN = 16
_BLANK_RUN = r"[^\S\r\n]+"  # compiled on first use (``re`` caches it): ``Host`` imports this


def _count_line_ends(text: str) -> int:
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _line_count(text: str) -> int:
    """Lines in ``text``: line ends, plus one for a last line without an end."""
    ends = _count_line_ends(text)
    return ends + 1 if text and not text.endswith(("\n", "\r")) else ends


def _check_blank_runs(text: str, path: str) -> None:
    """Refuse text whose long blank runs would make python-dotenv's parser quadratic."""
    import re

    cost = 0
    for match in re.finditer(_BLANK_RUN, text):
        length = match.end() - match.start()
        if length <= _FREE_BLANK_RUN or text.startswith("#", match.end()):
            continue  # short, or ends in a comment: linear for python-dotenv
        cost += length * length
        if cost > MAX_BLANK_RUN_COST:
            line = _count_line_ends(text[: match.start()]) + 1
            raise DotenvError(
                path,
                "too many long runs of blank characters (python-dotenv parses them "
                "in quadratic time)",
                line=line,
            )


def _binding_line(original_line: int, original: str) -> int:
    """The line where a binding's own text starts (python-dotenv counts from blanks before it)."""
    lead = original[: len(original) - len(original.lstrip())]
    return original_line + _count_line_ends(lead)


def _interpolate(
    value: str, *envs: Mapping[str, str | None], limit: int | None = None
) -> str | None:
    """Resolve ``${NAME}`` and ``${NAME:-default}`` like python-dotenv, in linear time.

    python-dotenv's regex: ``\\$\\{([^}:]*)(?::-([^}]*))?\\}``, matched left to right,
    non-overlapping. A name runs to the first ``}`` or ``:``; after ``:-`` a
    default runs to the next ``}``. Anything else is literal. The next ``}``
    and ``:`` are found once per position and reused, so the scan is linear.
    A name resolves from the first of ``envs`` that holds it; one held with
    the value None (a key written without ``=``) resolves to ``""``, its
    default ignored, as in python-dotenv. Returns None when the result would
    be longer than ``limit`` characters.
    """
    out: list[str] = []
    size = 0
    cursor = 0
    next_close = next_colon = -2  # -2: not searched yet; -1: none left
    start = value.find("${")
    while start != -1:
        name_at = start + 2
        if next_close != -1 and next_close < name_at:
            next_close = value.find("}", name_at)
        if next_colon != -1 and next_colon < name_at:
            next_colon = value.find(":", name_at)
        end = -1
        name = default = None
        if next_close != -1 and (next_colon == -1 or next_close < next_colon):
            name, end = value[name_at:next_close], next_close + 1
        elif next_close != -1 and value.startswith("-", next_colon + 1):
            # ":" comes first and is followed by "-", so the next "}" ends the default.
            name, default = value[name_at:next_colon], value[next_colon + 2 : next_close]
            end = next_close + 1
        if name is None:
            start = value.find("${", start + 1)
            continue
        held = next(((env[name],) for env in envs if name in env), None)
        resolved = (default or "") if held is None else (held[0] or "")
        size += (start - cursor) + len(resolved)
        if limit is not None and size > limit:
            return None
        out.append(value[cursor:start])
        out.append(resolved)
        cursor = end
        start = value.find("${", end)
    if limit is not None and size + len(value) - cursor > limit:
        return None
    out.append(value[cursor:])
    return "".join(out)


class _Recorder(Mapping[str, str]):
    """An empty env that records each name looked up in it (``references``)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name not in self.names:
            self.names.append(name)
        return False

    def __getitem__(self, name: str) -> str:
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def references(value: str) -> list[str]:
    """The names ``${NAME}``/``${NAME:-default}`` in ``value`` refers to, in order, once each.

    Found by the one scanner interpolation uses, so a value has a reference
    exactly when a dotenv load would expand something in it.
    """
    if "${" not in value:
        return []
    recorder = _Recorder()
    _interpolate(value, recorder)
    return recorder.names


def _too_large() -> str:
    return f"values hold more than {MAX_EXPANDED_CHARS} characters after ${{VAR}} interpolation"


def _check_name(name: str, path: str, line: int) -> None:
    if valid_name(name):
        return
    if not name:
        raise DotenvError(path, "empty variable name", line=line)
    raise DotenvError(path, "variable name holds '=' or NUL", line=line)


def parse_dotenv(
    text: str,
    *,
    path: str,
    environ: Mapping[str, str] | None = None,
    override: bool = False,
    interpolate: bool = True,
    universal_newlines: bool = False,
) -> dict[str, str]:
    """Parse dotenv text into a new dict; ``${VAR}`` resolves against the file and ``environ``.

    With ``override`` False (a launch load), a value already in ``environ``
    wins over the file's own for interpolation, as python-dotenv does;
    with ``override`` True the file's values win. A key without ``=`` has no
    value (see the module docstring). ``universal_newlines`` turns every
    ``\\r\\n`` and lone ``\\r`` into ``\\n`` first, as reading a file in text
    mode does. A malformed line is a ``DotenvError`` naming the file and line.
    """
    from dotenv.parser import parse_stream

    if universal_newlines and "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _line_count(text) > MAX_DOTENV_LINES:
        raise DotenvError(path, f"more than {MAX_DOTENV_LINES} lines")
    _check_blank_runs(text, path)
    outside: Mapping[str, str] = environ if environ is not None else {}
    values: dict[str, str | None] = {}  # None: a key written without "="
    budget = MAX_EXPANDED_CHARS
    for binding in parse_stream(io.StringIO(text)):
        line = _binding_line(binding.original.line, binding.original.string)
        if binding.error:
            raise DotenvError(path, "malformed line (python-dotenv could not parse it)", line=line)
        if binding.key is None:
            continue
        _check_name(binding.key, path, line)
        if binding.value is None:
            values[binding.key] = None  # no value: python-dotenv loads none
            continue
        value = binding.value
        if interpolate and "$" in value:
            envs = (values, outside) if override else (outside, values)
            resolved = _interpolate(value, *envs, limit=budget)
            if resolved is None:
                raise DotenvError(path, _too_large(), line=line)
            value = resolved
        budget -= len(value)
        if budget < 0:
            raise DotenvError(path, _too_large(), line=line)
        if "\x00" in value:
            raise DotenvError(path, f"value of {binding.key!r} holds a NUL byte", line=line)
        values[binding.key] = value
    return {key: value for key, value in values.items() if value is not None}


def read_dotenv(
    path: str,
    *,
    environ: Mapping[str, str] | None = None,
    override: bool = False,
    missing_ok: bool = True,
    interpolate: bool = True,
    unless_same_as: str | None = None,
) -> dict[str, str]:
    """Read and parse a dotenv file; a missing file is empty when ``missing_ok``.

    With ``unless_same_as``, a file that is that file (the same device and
    inode, through any name: a symlink, a hard link, a bind mount) reads as
    empty; the check is made on the descriptor read, so no swap between a
    ``stat`` and the read can slip it in.
    """
    # Each error is raised outside the handler that saw the OSError or the
    # UnicodeDecodeError (which holds the whole file): no error carries a context.
    from envscope.files._fs import (  # on use: ``Host`` imports this module, not typing
        SameFileError,
        read_regular_file,
    )

    refuse = None
    if unless_same_as is not None:
        try:
            refuse = os.stat(unless_same_as)
        except (OSError, ValueError):
            refuse = None  # no such file: nothing can be it
    failure: DotenvError | None = None
    try:
        data = read_regular_file(path, MAX_DOTENV_BYTES, refuse=refuse)
    except SameFileError:
        return {}
    except FileNotFoundError:
        if missing_ok:
            return {}
        failure = DotenvError(path, "file not found")
    except OSError as exc:
        failure = DotenvError(path, f"cannot read: {exc.strerror or exc.__class__.__name__}")
    if failure is not None:
        raise failure
    if data is None:
        raise DotenvError(path, "not a regular file")
    if len(data) > MAX_DOTENV_BYTES:
        raise DotenvError(path, f"larger than {MAX_DOTENV_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = _count_line_ends(exc.object[: exc.start].decode("utf-8", "replace")) + 1
        failure = DotenvError(path, f"not valid UTF-8 at byte {exc.start}", line=line)
    if failure is not None:
        raise failure

    def parse() -> tuple[tuple[str, str], ...]:
        values = parse_dotenv(
            text,
            path=path,
            environ=environ,
            override=override,
            interpolate=interpolate,
            universal_newlines=True,  # python-dotenv reads files in text mode
        )
        return tuple(values.items())

    if "$" in text:  # interpolation reads ``environ``: not a function of the text alone
        return dict(parse())
    return dict(DOTENV_PARSES.answer((path, text), len(text), parse))
