"""``run_source_cli``, the one runner every CLI-backed source uses, and its stderr filter.

A table of clients (shell scripts) over the runner's seams: what the child's
environment holds, that it has no controlling terminal, that a hang ends at the
timeout even when the client left a grandchild holding its pipes, what a
failure quotes (filtered, or what the source's own ``failure_of`` says), and
that no ``SourceError`` carries a context (a timeout's holds partial output).
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from envscope import (
    AgeFileSource,
    AwsSecretsSource,
    ConfigurationError,
    KeyringSource,
    SourceError,
    VaultSource,
)
from envscope.policy._cli_source import STDERR_CHARS, filtered_stderr, run_source_cli

CREDENTIAL = "cred-value-0123456789abcdef"


def _client(where: Path, body: str) -> str:
    exe = where / "client"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def _run(exe: str, *, timeout: float = 5, **kwargs: object) -> str:
    return run_source_cli(
        "src",
        "ref",
        (exe,),
        {"SRC_TOKEN": CREDENTIAL},
        timeout=timeout,
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_client_holds_path_lang_settings_and_credentials_only(tmp_path: Path) -> None:
    exe = _client(tmp_path, 'python3 -c "import json, os; print(json.dumps(dict(os.environ)))"')
    seen = json.loads(_run(exe, settings={"STORE_DIR": "/s"}))
    assert set(seen) - {"PWD", "SHLVL", "_", "LC_CTYPE"} == {
        "PATH", "LANG", "STORE_DIR", "SRC_TOKEN"
    }  # fmt: skip


def test_the_client_has_no_controlling_terminal(tmp_path: Path) -> None:
    """A new session: a client that would open /dev/tty for a prompt cannot."""
    exe = _client(tmp_path, 'exec python3 -c "import os; print(os.getsid(0) == os.getpid())"')
    assert _run(exe) == "True"


def test_a_hang_ends_at_the_timeout_with_its_grandchildren(tmp_path: Path) -> None:
    exe = _client(tmp_path, "sleep 30 &\nsleep 30")
    started = time.monotonic()
    with pytest.raises(SourceError, match=r"did not answer within 0\.5 s") as raised:
        _run(exe, timeout=0.5)
    assert time.monotonic() - started < 5
    assert raised.value.__context__ is None
    assert raised.value.__cause__ is None


@pytest.mark.parametrize(
    ("body", "failure_of", "said"),
    [
        (f'echo "denied for {CREDENTIAL}" >&2; exit 3', None,
         "client exited 3: denied for [masked]"),
        ('echo "bad intro: PASSWORD=hunter2-hunter2" >&2; exit 1', lambda _: "not an age file",
         "client exited 1: not an age file"),
        ("exit 4", None, "client exited 4: "),
    ],
    ids=["credential-masked", "source-says-what-failed", "silent"],
)  # fmt: skip
def test_what_a_failure_quotes(tmp_path: Path, body: str, failure_of: object, said: str) -> None:
    with pytest.raises(SourceError) as raised:
        _run(_client(tmp_path, body), failure_of=failure_of)
    assert str(raised.value).endswith(said)
    assert "hunter2" not in str(raised.value)
    assert raised.value.__context__ is None


@pytest.mark.parametrize(
    ("argv0", "said"), [("/no/such/client", "is not installed"), ("/", "could not start")]
)
def test_a_client_that_cannot_start(argv0: str, said: str) -> None:
    with pytest.raises(SourceError, match=said) as raised:
        _run(argv0)
    assert raised.value.__context__ is None


def test_filtered_stderr_is_one_printable_bounded_line() -> None:
    data = ("line one\n\x1b[31mred\x1b[0m\n\n" + "x" * 500).encode()
    line = filtered_stderr(data, {})
    assert "\n" not in line
    assert "\x1b" not in line
    assert len(line) == STDERR_CHARS
    assert line.endswith("…")


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("KeyringSource", lambda m: KeyringSource("svc", {}, missing=m)),
        ("AgeFileSource", lambda m: AgeFileSource({}, identities="k", missing=m)),
        ("VaultSource", lambda m: VaultSource({}, missing=m)),
        ("AwsSecretsSource", lambda m: AwsSecretsSource({}, missing=m)),
    ],
)
def test_every_source_with_a_missing_choice_checks_it_one_way(kind: str, make: object) -> None:
    """One check (``_missing``) for every source that takes ``missing``: the same words."""
    for choice in ("raise", "unset"):
        make(choice)  # type: ignore[operator]
    with pytest.raises(ConfigurationError, match=f"^{kind}: missing must be 'raise' or 'unset'"):
        make("skip")  # type: ignore[operator]
