"""Running a secret source's command-line client: its credential and nothing else, bounded.

``run_source_cli`` runs one CLI call for a source (``op read …``) and returns
what it printed. The child's environment is ``PATH`` (the OS default), a
``LANG``, the client's own settings (where its store is) and the source's
own credentials, nothing else: no host secret
reaches a vault's CLI, and the call is bounded by ``timeout`` seconds with
stdin closed, so a prompt never waits. Every failure is a ``SourceError``
naming the source and the reference: the client missing, not answering in
time, or exiting non-zero. On a non-zero exit the message carries the
client's stderr, its lines joined, *filtered*: each credential value and anything of
a credential format masked, control characters removed, at most
``STDERR_CHARS`` characters (a client may echo what it was given).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from envscope.errors import SourceError

__all__ = ["STDERR_CHARS", "filtered_stderr", "run_source_cli"]

STDERR_CHARS = 200
"""The most characters of a client's stderr a ``SourceError`` quotes (after filtering)."""

_MASK = "[masked]"


def filtered_stderr(data: bytes, credentials: Mapping[str, str]) -> str:
    """``data``'s non-blank lines joined, secrets masked: one printable line, bounded."""
    from envscope.policy.formats import format_table

    text = data.decode("utf-8", "replace")
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    for value in sorted(credentials.values(), key=len, reverse=True):
        if len(value) >= 8:
            line = line.replace(value, _MASK)
    spans = [(a, b) for _, a, b in format_table().spans(line)]
    for a, b in reversed(spans):
        line = line[:a] + _MASK + line[b:]
    line = "".join(c if c.isprintable() else " " for c in line)
    return line if len(line) <= STDERR_CHARS else line[: STDERR_CHARS - 1] + "…"


def run_source_cli(
    source: str,
    reference: str,
    argv: Sequence[str],
    credentials: Mapping[str, str],
    *,
    timeout: float,
    settings: Mapping[str, str] | None = None,
) -> str:
    """What the client printed (one trailing newline dropped); a ``SourceError`` otherwise.

    ``settings`` are the client's own non-secret settings (``PASSWORD_STORE_DIR``):
    passed to it beside the credentials, never masked.
    """
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", **(settings or {}), **credentials}
    tool = os.path.basename(argv[0])
    failure: SourceError | None = None
    try:
        done = subprocess.run(
            list(argv), env=env, stdin=subprocess.DEVNULL, capture_output=True,
            timeout=timeout, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        failure = SourceError(source, reference, f"{tool} is not installed")
    except subprocess.TimeoutExpired:
        failure = SourceError(source, reference, f"{tool} did not answer within {timeout:g} s")
    except OSError as exc:
        failure = SourceError(source, reference, f"{tool} could not start ({exc.strerror})")
    if failure is not None:
        raise failure
    if done.returncode != 0:
        said = filtered_stderr(done.stderr, credentials)
        raise SourceError(source, reference, f"{tool} exited {done.returncode}: {said}")
    out = done.stdout.decode("utf-8", "replace")
    return out[:-1] if out.endswith("\n") else out
