"""The sources over a vendor's command-line client, and the one runner they share.

``OnePasswordSource``, ``BitwardenSource`` and ``PassSource`` (exported by
``envscope.policy.sources``) each run their client once per entry through
``run_source_cli``: its credential and nothing else, bounded.

``run_source_cli`` runs one CLI call for a source (``op read …``) and returns
what it printed. The child's environment is ``PATH`` (the OS default), a
``LANG``, the client's own settings (where its store is) and the source's
own credentials, nothing else: no host secret
reaches a vault's CLI, and the call is bounded by ``timeout`` seconds with
stdin closed and no controlling terminal (a new session), so a prompt never
waits. Every failure is a ``SourceError``
naming the source and the reference: the client missing, not answering in
time, or exiting non-zero. On a non-zero exit the message carries the
client's stderr, its lines joined, *filtered*: each credential value and anything of
a credential format masked, control characters removed, at most
``STDERR_CHARS`` characters (a client may echo what it was given).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING

from envscope.errors import SourceError
from envscope.policy._source_entries import _EntrySource, _timeout

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "BWS_CREDENTIALS",
    "OP_CREDENTIALS",
    "STDERR_CHARS",
    "BitwardenSource",
    "OnePasswordSource",
    "PassSource",
    "filtered_stderr",
    "own_credentials",
    "run_source_cli",
]

STDERR_CHARS = 200
"""The most characters of a client's stderr a ``SourceError`` quotes (after filtering)."""

_MASK = "[masked]"

# The one spawn under way in this thread (or task) that is a source's own CLI call:
# the very env object ``run_source_cli`` made, and its credential names. Set for the
# ``Popen`` call alone and reset in a ``finally``: nothing outlives the spawn.
_OWN_SPAWN: ContextVar[tuple[object, frozenset[str]] | None] = ContextVar(
    "envscope_source_spawn", default=None
)


def own_credentials(env: object) -> frozenset[str]:
    """The credential names a source's own CLI spawn hands over, when ``env`` is its env.

    What the runtime guard exempts (``source-own``): only for the very env object
    ``run_source_cli`` is spawning with, in this thread, during that ``Popen``
    call; empty for any other spawn (a copy of that env, another thread, later).
    """
    under_way = _OWN_SPAWN.get()
    if under_way is None or under_way[0] is not env:
        return frozenset()
    return under_way[1]


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
    failure_of: Callable[[str], str] | None = None,
    masked: Sequence[str] = (),
) -> str:
    """What the client printed (one trailing newline dropped); a ``SourceError`` otherwise.

    ``settings`` are the client's own non-secret settings (``PASSWORD_STORE_DIR``):
    passed to it beside the credentials, never masked. ``failure_of`` turns the
    client's filtered stderr into what a failure says, for a client whose errors may
    quote its input (``age`` quotes a plaintext file's first line); by default the
    filtered stderr is quoted. ``masked`` are more values to mask in it (what the
    source fetched before this call: a client may echo an earlier answer).
    """
    import subprocess

    env = {"PATH": os.defpath, "LANG": "C.UTF-8", **(settings or {}), **credentials}
    tool = os.path.basename(argv[0])
    # Each failure is raised outside its handler, so no SourceError carries a context
    # (a TimeoutExpired holds what the client printed so far: perhaps a value).
    failure: SourceError | None = None
    spawning = _OWN_SPAWN.set((env, frozenset(credentials)))
    try:
        child = subprocess.Popen(
            list(argv), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except FileNotFoundError:
        failure = SourceError(source, reference, f"{tool} is not installed")
    except OSError as exc:
        failure = SourceError(source, reference, f"{tool} could not start ({exc.strerror})")
    finally:
        _OWN_SPAWN.reset(spawning)
    if failure is not None:
        raise failure
    try:
        out_bytes, err_bytes = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        failure = SourceError(source, reference, f"{tool} did not answer within {timeout:g} s")
    if failure is not None:
        raise failure
    if child.returncode != 0:
        hidden = {**credentials, **{f"masked {i}": v for i, v in enumerate(masked)}}
        said = filtered_stderr(err_bytes, hidden)
        if failure_of is not None:
            said = failure_of(said)
        raise SourceError(source, reference, f"{tool} exited {child.returncode}: {said}")
    out = out_bytes.decode("utf-8", "replace")
    return out[:-1] if out.endswith("\n") else out


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    """Kill the client and everything it started (its own session), then reap it.

    A client that is a script (``pass`` runs ``gpg``) leaves children holding
    the pipes: killing only the client would leave ``communicate`` waiting on them.
    """
    import signal
    from contextlib import suppress

    with suppress(ProcessLookupError):  # the group ended between the timeout and the kill
        os.killpg(child.pid, signal.SIGKILL)
    child.communicate()


class _CliSource(_EntrySource):
    """A source that runs its vendor's CLI once per entry (``policy._cli_source``).

    The CLI gets ``PATH``, ``LANG``, its ``cli_settings`` (non-secret names such
    as ``PASSWORD_STORE_DIR``) and this source's ``credential_names`` from
    ``environ`` (read at each fetch; default ``os.environ``), nothing else,
    within ``timeout`` seconds. ``executable`` is a path, or a name looked up on
    ``environ``'s ``PATH``. Subclasses say how to ask (``_argv``) and read the
    answer (``_value``).
    """

    cli_settings: tuple[str, ...] = ()
    default_name = ""  # each source's: its name, and its client's command
    default_executable = ""

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str | None = None,
        environ: Mapping[str, str] | None = None,
        executable: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(self.default_name if name is None else name, entries)
        self._environ = environ
        self.executable = self.default_executable if executable is None else executable
        self.timeout = _timeout(type(self).__name__, timeout)

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        raise NotImplementedError

    def _value(self, out: str, reference: str) -> str:
        return out

    def _precheck(self, reference: str, said: str, settings: Mapping[str, str]) -> None:
        """Raise a ``SourceError`` before the CLI runs when the answer is known already."""

    def fetch(self, home: str) -> Mapping[str, str]:
        """One CLI call per entry for ``home`` (a ``SourceError`` at the first failure)."""
        import shutil

        environ = os.environ if self._environ is None else self._environ
        credentials = {k: environ[k] for k in self.credential_names if environ.get(k)}
        settings = {k: environ[k] for k in self.cli_settings if environ.get(k)}
        exe = shutil.which(self.executable, path=environ.get("PATH")) or self.executable
        values: dict[str, str] = {}
        for key, ref in sorted(self._for(home).items()):
            said = self._describe(ref)
            self._precheck(ref, said, settings)
            out = run_source_cli(self._name, said, self._argv(exe, ref), credentials,
                                 timeout=self.timeout, settings=settings,
                                 masked=tuple(values.values()))  # fmt: skip
            values[key] = self._value(out, said)
        return values


OP_CREDENTIALS = ("OP_SERVICE_ACCOUNT_TOKEN", "OP_CONNECT_HOST", "OP_CONNECT_TOKEN")
"""What the 1Password CLI authenticates with (Tier 1 for every child of a host using it)."""


class OnePasswordSource(_CliSource):
    """A secret source over the 1Password CLI: ``op read op://vault/item/field`` per entry.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: "op://…"}``; the CLI
    runs as every ``_CliSource`` does, with the 1Password credentials
    (``OP_CREDENTIALS``). A reference the CLI cannot read is a ``SourceError``
    naming it, with the CLI's stderr filtered (credentials and credential
    formats masked).
    """

    credential_names: tuple[str, ...] = OP_CREDENTIALS
    _needs = "an op://vault/item/field reference"

    default_name = "1password"
    default_executable = "op"

    def _valid(self, reference: str) -> bool:
        return reference.startswith("op://")

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        return (exe, "read", "--no-newline", reference)


BWS_CREDENTIALS = ("BWS_ACCESS_TOKEN",)
"""What the Bitwarden Secrets Manager CLI authenticates with (Tier 1 for every child)."""

_SECRET_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


class BitwardenSource(_CliSource):
    """A secret source over Bitwarden Secrets Manager: ``bws secret get ID --output json``.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: secret id}`` (a
    UUID); the CLI runs as every ``_CliSource`` does, with ``BWS_ACCESS_TOKEN``.
    The value is the ``value`` field of the JSON it prints; anything else is a
    ``SourceError`` naming the secret id.
    """

    credential_names: tuple[str, ...] = BWS_CREDENTIALS
    _needs = "a secret id (a UUID)"

    default_name = "bitwarden"
    default_executable = "bws"

    def _valid(self, reference: str) -> bool:
        return _SECRET_ID.fullmatch(reference) is not None

    def _describe(self, reference: str) -> str:
        return f"secret {reference}"

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        return (exe, "secret", "get", reference, "--output", "json")

    def _value(self, out: str, reference: str) -> str:
        import json

        try:
            value = json.loads(out).get("value")
        except (ValueError, AttributeError):  # not JSON, or not an object
            value = None
        if not isinstance(value, str):  # raised outside the handler: no context kept
            raise SourceError(self._name, reference, "bws printed no secret value")
        return value


class PassSource(_CliSource):
    """A secret source over ``pass``, the standard Unix password store: ``pass show NAME``.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: "path/in/store"}``;
    the value is the first line of what ``pass show`` prints (pass's own
    convention: the password first, notes after). The CLI runs as every
    ``_CliSource`` does, with ``HOME``, ``GNUPGHOME`` and ``PASSWORD_STORE_DIR``
    (where the store and the key are, ``cli_settings``): no variable holds a
    credential (gpg-agent holds the key), so ``credential_names`` is empty. A
    key that needs a passphrase the agent has not cached fails (stdin is
    closed) rather than waiting. A store path is never read as an option: it
    may not start with ``-`` nor hold a ``..`` segment, and a path that is no
    ``NAME.gpg`` file of the store (a folder, which ``pass show`` would list) is a
    ``SourceError`` before the CLI runs.
    """

    cli_settings: tuple[str, ...] = ("HOME", "GNUPGHOME", "PASSWORD_STORE_DIR")
    _needs = "a password-store path (no leading '-' or '/', no '..')"

    default_name = "pass"
    default_executable = "pass"

    def _valid(self, reference: str) -> bool:
        return (
            reference.isprintable()
            and reference[:1] not in ("", "-", "/", " ")
            and not reference.endswith("/")
            and ".." not in reference.split("/")
        )

    def _precheck(self, reference: str, said: str, settings: Mapping[str, str]) -> None:
        """An entry is a file ``NAME.gpg`` in the store: ``pass show`` on a folder lists it."""
        store = settings.get("PASSWORD_STORE_DIR") or os.path.join(
            settings.get("HOME", "~"), ".password-store"
        )
        if not os.path.isfile(os.path.join(store, reference + ".gpg")):
            raise SourceError(self._name, said, "the store holds no such entry")

    def _argv(self, exe: str, reference: str) -> tuple[str, ...]:
        return (exe, "show", "--", reference)

    def _value(self, out: str, reference: str) -> str:
        first = out.split("\n", 1)[0]
        if not first:  # raised outside any handler: no context kept
            raise SourceError(self._name, reference, "the entry's first line is empty")
        return first
