"""``redact_output=True`` on ``envscope.spawn.run`` and ``check_output``: real children.

A bash child prints the token it was granted on stdout and stderr. With
``redact_output=True`` every captured stream, in the result and in the errors
``subprocess`` raises (``CalledProcessError``, ``TimeoutExpired``), holds the
mask instead; without it, the very same call shows the token (so each test can
fail). Output that would go to the caller's terminal is refused.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envscope import Catalog, ConfigurationError, Host
from envscope.spawn import check_output, run

TOKEN = "granted-deploy-token-0123456789"
PRINTS = 'echo "out=$DEPLOY_TOKEN"; echo "err=$DEPLOY_TOKEN" >&2'


@pytest.fixture
def host(tmp_path: Path) -> Host:
    made = Host(tmp_path, environ={"PATH": os.defpath}, catalog=Catalog.default())
    made.load_launch_env()
    return made


def _run(host: Host, script: str, **kwargs: object) -> subprocess.CompletedProcess[object]:
    return run(host, ["bash", "-c", script], surface="terminal", extra={"DEPLOY_TOKEN": TOKEN},
               grant=["DEPLOY_TOKEN"], **kwargs)  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize("text", [True, False])
def test_both_streams_come_back_masked_and_unmasked_without_it(host: Host, text: bool) -> None:
    plain = _run(host, PRINTS, capture_output=True, text=text)
    masked = _run(host, PRINTS, capture_output=True, text=text, redact_output=True)

    def as_text(output: object) -> str:
        assert isinstance(output, (str, bytes))
        return output if isinstance(output, str) else output.decode()

    assert as_text(plain.stdout) == f"out={TOKEN}\n"
    assert as_text(masked.stdout) == "out=[REDACTED:DEPLOY_TOKEN]\n"
    assert as_text(masked.stderr) == "err=[REDACTED:DEPLOY_TOKEN]\n"
    assert masked.returncode == 0


def test_a_failed_check_raises_with_masked_output(host: Host) -> None:
    with pytest.raises(subprocess.CalledProcessError) as raised:
        _run(host, PRINTS + "; exit 3", capture_output=True, text=True, check=True,
             redact_output=True)  # fmt: skip
    err = raised.value
    assert err.returncode == 3
    assert TOKEN not in f"{err.output}{err.stderr}"
    assert "[REDACTED:DEPLOY_TOKEN]" in err.output


def test_a_timeout_raises_with_masked_output(host: Host) -> None:
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        _run(host, PRINTS + "; exec sleep 30", capture_output=True, timeout=1,
             redact_output=True)  # fmt: skip
    err = raised.value
    assert TOKEN.encode() not in (err.output or b"") + (err.stderr or b"")
    assert err.__context__ is None


def test_check_output_masks_and_needs_stderr_captured(host: Host) -> None:
    common = {"surface": "terminal", "extra": {"DEPLOY_TOKEN": TOKEN}, "grant": ["DEPLOY_TOKEN"]}
    out = check_output(host, ["bash", "-c", PRINTS], stderr=subprocess.STDOUT, text=True,
                       redact_output=True, **common)  # type: ignore[arg-type]  # fmt: skip
    assert out == "out=[REDACTED:DEPLOY_TOKEN]\nerr=[REDACTED:DEPLOY_TOKEN]\n"
    plain = check_output(host, ["bash", "-c", PRINTS], stderr=subprocess.DEVNULL, text=True,
                         **common)  # type: ignore[arg-type]  # fmt: skip
    assert plain == f"out={TOKEN}\n"
    with pytest.raises(ConfigurationError, match="output captured"):
        check_output(host, ["true"], redact_output=True, **common)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"stdout": subprocess.PIPE}, {"stderr": subprocess.PIPE}, {"stdout": None}],
    ids=["nothing", "stdout-only", "stderr-only", "stdout-none"],
)
def test_output_to_the_terminal_is_refused(host: Host, kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="cannot be masked"):
        _run(host, PRINTS, redact_output=True, **kwargs)


def test_the_pytest_helper_names_each_secret_in_output_and_passes_masked_output(
    host: Host,
) -> None:
    from envscope.testing import assert_output_redacted

    child = host.build_subprocess_env(extra={"DEPLOY_TOKEN": TOKEN}, grant=["DEPLOY_TOKEN"])
    plain = _run(host, PRINTS, capture_output=True, text=True)
    printed = f"{plain.stdout}{plain.stderr}"
    with pytest.raises(AssertionError, match=r"output holds 1 secret: DEPLOY_TOKEN$") as raised:
        assert_output_redacted(printed, host=host, child=child)
    assert TOKEN not in str(raised.value)
    with pytest.raises(AssertionError, match="DEPLOY_TOKEN"):
        assert_output_redacted(printed.encode(), host=host, child=child)
    masked = _run(host, PRINTS, capture_output=True, text=True, redact_output=True)
    assert_output_redacted(f"{masked.stdout}{masked.stderr}", host=host, child=child)


def test_the_pytest_helper_names_a_credential_by_its_format(host: Host) -> None:
    """A token no env holds (the child fetched it) is named by its format, never quoted."""
    from envscope.policy.formats import format_table
    from envscope.testing import assert_output_redacted

    stripe = next(f for f in format_table().formats if f.name.startswith("stripe"))
    with pytest.raises(AssertionError, match=f"output holds 1 secret: {stripe.name}$") as raised:
        assert_output_redacted(f"fetched {stripe.example}\n", host=host)
    assert stripe.example not in str(raised.value)
