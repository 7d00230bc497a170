"""Reading dotenv files: python-dotenv's parser, envscope's interpolation and limits.

python-dotenv's own ``dotenv_values`` interpolates ``${VAR}`` against the real
``os.environ``. envscope hosts may pass another ``environ``, so this module
parses with python-dotenv's parser and interpolates against the file itself
plus an explicit mapping the caller chooses (never silently the process).

``parse_dotenv`` is pure; ``read_dotenv`` is the one reader, used by ``Host``.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Mapping

from envscope.errors import DotenvError

__all__ = ["MAX_DOTENV_BYTES", "MAX_DOTENV_LINES", "parse_dotenv", "read_dotenv"]

MAX_DOTENV_BYTES = 1024 * 1024
MAX_DOTENV_LINES = 10_000


def _check_name(name: str, path: str, line: int) -> None:
    if not name:
        raise DotenvError(path, "empty variable name", line=line)
    if "=" in name or "\x00" in name:
        raise DotenvError(path, "variable name holds '=' or NUL", line=line)


def parse_dotenv(
    text: str,
    *,
    path: str,
    environ: Mapping[str, str] | None = None,
    override: bool = False,
    interpolate: bool = True,
) -> dict[str, str]:
    """Parse dotenv text into a new dict; ``${VAR}`` resolves against the file and ``environ``.

    With ``override`` False (a launch load), a value already in ``environ``
    wins over the file's own for interpolation, as python-dotenv does;
    with ``override`` True the file's values win. Keys without ``=`` are
    skipped. A malformed line is a ``DotenvError`` naming the file and line.
    """
    from dotenv.parser import parse_stream
    from dotenv.variables import parse_variables

    if text.count("\n") >= MAX_DOTENV_LINES:
        raise DotenvError(path, f"more than {MAX_DOTENV_LINES} lines")
    outside: Mapping[str, str] = environ if environ is not None else {}
    values: dict[str, str] = {}
    for binding in parse_stream(io.StringIO(text)):
        line = binding.original.line
        if binding.error:
            raise DotenvError(path, "malformed line (python-dotenv could not parse it)", line=line)
        if binding.key is None or binding.value is None:
            continue
        _check_name(binding.key, path, line)
        value = binding.value
        if interpolate and "$" in value:
            env: dict[str, str]
            env = {**outside, **values} if override else {**values, **outside}
            value = "".join(atom.resolve(env) for atom in parse_variables(value))
        if "\x00" in value:
            raise DotenvError(path, f"value of {binding.key!r} holds a NUL byte", line=line)
        values[binding.key] = value
    return values


def read_bytes_nonblocking(path: str, limit: int) -> bytes:
    """Read a regular file of at most ``limit`` bytes; never blocks on a FIFO.

    Raises ``FileNotFoundError`` when it is missing, ``OSError`` on other
    failures, ``DotenvError`` when it is not a regular file or too large.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DotenvError(path, "not a regular file")
        if info.st_size > limit:
            raise DotenvError(path, f"larger than {limit} bytes")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise DotenvError(path, f"larger than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_dotenv(
    path: str,
    *,
    environ: Mapping[str, str] | None = None,
    override: bool = False,
    missing_ok: bool = True,
    interpolate: bool = True,
) -> dict[str, str]:
    """Read and parse a dotenv file; a missing file is empty when ``missing_ok``."""
    try:
        data = read_bytes_nonblocking(path, MAX_DOTENV_BYTES)
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise DotenvError(path, "file not found") from None
    except OSError as exc:
        raise DotenvError(path, f"cannot read: {exc.strerror or exc.__class__.__name__}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DotenvError(path, f"not valid UTF-8 at byte {exc.start}") from None
    return parse_dotenv(
        text, path=path, environ=environ, override=override, interpolate=interpolate
    )
