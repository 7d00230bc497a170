"""``KeyringSource``: values from the OS keyring, failures as a ``SourceError`` with no value.

Against an in-memory keyring backend (``keyring.set_keyring``; the real
Secret Service daemon is another slice): a table of what a fetch returns or
raises, the host loading it at launch and for a routed home, and a property
that no error names a value the keyring holds.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import keyring
import pytest
from hypothesis import given
from hypothesis import strategies as st
from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordSetError

from envscope import (
    BitwardenSource,
    Catalog,
    ConfigurationError,
    Host,
    KeyringSource,
    OnePasswordSource,
    Reason,
    SourceError,
    StaticSource,
    Trace,
)
from envscope.policy.sources import declared_names_of, source_detail

SECRET = "kr-secret-value-0123456789"


class MemoryKeyring(KeyringBackend):
    """A keyring backend in memory; ``failing`` makes every read raise that error."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.store: dict[tuple[str, str], str] = {}
        self.failing: Exception | None = None

    def get_password(self, service: str, username: str) -> str | None:
        if self.failing is not None:
            raise self.failing
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@pytest.fixture
def ring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(before)


@pytest.mark.parametrize(
    ("stored", "missing", "expected"),
    [
        ({"gh-user": SECRET}, "raise", {"GH_TOKEN": SECRET}),
        ({}, "unset", {}),
        ({}, "raise", "no entry for GH_TOKEN"),
    ],
    ids=["found", "missing-unset", "missing-raise"],
)
def test_a_fetch_returns_or_raises(
    ring: MemoryKeyring, stored: dict[str, str], missing: str, expected: object
) -> None:
    for user, value in stored.items():
        ring.set_password("envscope", user, value)
    source = KeyringSource("envscope", {"*": {"GH_TOKEN": "gh-user"}}, missing=missing)
    assert source.supplied_names("/any/home") == {"GH_TOKEN"}
    if isinstance(expected, dict):
        assert source.fetch("/any/home") == expected
        return
    with pytest.raises(SourceError, match=str(expected)) as raised:
        source.fetch("/any/home")
    assert (raised.value.source, raised.value.reference) == (
        "keyring",
        "service 'envscope', user 'gh-user'",
    )


@pytest.mark.parametrize("error", [KeyringLocked(f"locked: {SECRET}"), PasswordSetError(SECRET)])
def test_a_keyring_that_cannot_answer_raises_without_its_message(
    ring: MemoryKeyring, error: Exception
) -> None:
    ring.failing = error
    source = KeyringSource("envscope", {"*": {"GH_TOKEN": "gh-user"}}, missing="unset")
    with pytest.raises(SourceError) as raised:
        source.fetch("/home")
    assert SECRET not in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None
    assert type(error).__name__ in str(raised.value)


def test_a_home_s_entries_are_laid_over_every_home_s(ring: MemoryKeyring) -> None:
    ring.set_password("svc", "shared", "shared-value-01234")
    ring.set_password("svc", "b-user", "b-value-0123456789")
    source = KeyringSource("svc", {"*": {"SHARED_TOKEN": "shared"}, "/b": {"B_TOKEN": "b-user"}})
    assert source.fetch("/a") == {"SHARED_TOKEN": "shared-value-01234"}
    assert source.fetch("/b") == {
        "SHARED_TOKEN": "shared-value-01234",
        "B_TOKEN": "b-value-0123456789",
    }


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", {}), {}),
        (("svc", {"*": {"NOT A NAME": "u"}}), {}),
        (("svc", {"*": {"GH_TOKEN": ""}}), {}),
        (("svc", {}), {"missing": "ignore"}),
    ],
    ids=["no-service", "bad-name", "no-user", "bad-missing"],
)
def test_a_wrong_configuration_is_an_error(
    args: tuple[object, ...], kwargs: dict[str, str]
) -> None:
    with pytest.raises(ConfigurationError):
        KeyringSource(*args, **kwargs)  # type: ignore[arg-type]


def test_a_host_loads_it_and_its_value_is_a_secret(ring: MemoryKeyring, tmp_path: Path) -> None:
    """At launch the host puts the keyring's value into its env; a copy of it never reaches a
    terminal child under another name."""
    ring.set_password("envscope", "app", SECRET)
    host = Host(tmp_path, environ={"PATH": "/usr/bin", "COPY": SECRET}, catalog=Catalog.default())
    host.add_secret_source(KeyringSource("envscope", {"*": {"APP_TOKEN": "app"}}))
    host.load_launch_env()
    assert "APP_TOKEN" in host.source_applied_names()
    child = host.build_subprocess_env()
    assert SECRET not in child.values()


@given(st.text(min_size=8, max_size=40), st.sampled_from(["raise", "unset"]))
def test_no_error_holds_a_value_the_keyring_holds(value: str, missing: str) -> None:
    memory = MemoryKeyring()
    memory.set_password("svc", "other", value)
    memory.failing = KeyringLocked(value)
    before = keyring.get_keyring()
    keyring.set_keyring(memory)
    try:
        source = KeyringSource("svc", {"*": {"X_TOKEN": "u"}}, missing=missing)
        with pytest.raises(SourceError) as raised:
            source.fetch("/h")
    finally:
        keyring.set_keyring(before)
    assert value not in str(raised.value) or value in "svc X_TOKEN u keyring"


@pytest.mark.parametrize("declared", [True, False], ids=["supplied_names", "fetched-only"])
def test_a_name_the_source_could_not_fetch_is_still_the_source_s(
    ring: MemoryKeyring, tmp_path: Path, declared: bool
) -> None:
    """The keyring lacks ACME_DSN (missing="unset"); a stale launch value under that name is
    launch residue for a routed child when the source declares it, and only then."""
    launch, routed = tmp_path / "A", tmp_path / "B"
    launch.mkdir()
    routed.mkdir()
    source: object = KeyringSource("svc", {"*": {"ACME_DSN": "dsn"}}, missing="unset")
    if not declared:
        source = StaticSource("svc", {})
    host = Host(launch, environ={"PATH": "/usr/bin", "ACME_DSN": "stale-value"},
                catalog=Catalog.default())  # fmt: skip
    host.add_secret_source(source)  # type: ignore[arg-type]
    host.load_launch_env()
    assert ("ACME_DSN" in host.source_supplied_names()) is declared
    trace = Trace()
    with host.routed(routed):
        child = host.build_subprocess_env(trace=trace)
    assert ("ACME_DSN" in child) is not declared
    if declared:
        assert trace.final()["ACME_DSN"].reason is Reason.LAUNCH_RESIDUE


def test_supplied_names_must_be_names() -> None:
    class Bad(StaticSource):
        def supplied_names(self, home: str) -> str:
            return "ACME_DSN"

    with pytest.raises(ConfigurationError, match="supplied_names"):
        declared_names_of(Bad("bad", {}), "/h")


class Failing(StaticSource):
    """A source that cannot answer for one home (its names: ACME_DSN)."""

    def __init__(self, failing_home: str) -> None:
        super().__init__("vault", {"*": {"ACME_DSN": "dsn-value-0123"}})
        self.failing_home = failing_home

    def supplied_names(self, home: str) -> frozenset[str]:
        return frozenset({"ACME_DSN"})

    def fetch(self, home: str) -> Mapping[str, str]:
        if home == self.failing_home:
            raise SourceError("vault", "secret/acme", "the vault is sealed")
        return super().fetch(home)


@pytest.mark.parametrize("where", ["launch", "routed"])
@pytest.mark.parametrize("on_failure", ["raise", "unset"])
def test_the_host_chooses_what_a_failure_does(tmp_path: Path, where: str, on_failure: str) -> None:
    """``raise`` stops the load (or the binding); ``unset`` leaves the names unset, keeps the
    failure (no value in it), and the names stay the source's."""
    launch, routed = tmp_path / "A", tmp_path / "B"
    launch.mkdir()
    routed.mkdir()
    failing = str(launch if where == "launch" else routed)
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(Failing(failing), on_failure=on_failure)  # type: ignore[arg-type]

    def run() -> dict[str, str]:
        host.load_launch_env()
        with host.routed(routed):
            return host.build_subprocess_env()

    if on_failure == "raise":
        with pytest.raises(SourceError, match="secret/acme"):
            run()
        assert host.source_failures() == ()
        return
    child = run()
    assert "ACME_DSN" in host.source_supplied_names()
    assert ("ACME_DSN" in child) is (where == "launch")  # B's own fetch answered, or not
    (failure,) = host.source_failures()
    assert (failure.source, failure.reference) == ("vault", "secret/acme")
    assert "dsn-value" not in str(failure)


def test_on_failure_must_be_a_known_choice(tmp_path: Path) -> None:
    host = Host(tmp_path, environ={}, catalog=Catalog.default())
    with pytest.raises(ConfigurationError, match="on_failure"):
        host.add_secret_source(StaticSource("s", {}), on_failure="ignore")  # type: ignore[arg-type]


class Counting(StaticSource):
    """A source that counts its fetches per home."""

    def __init__(self) -> None:
        super().__init__("vault", {"*": {"ACME_DSN": "dsn-value-0123"}})
        self.calls: list[str] = []

    def fetch(self, home: str) -> Mapping[str, str]:
        self.calls.append(home)
        return super().fetch(home)


def test_a_ttl_keeps_the_most_recent_homes_within_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SOURCE_HOMES_KEPT homes at most: a new home pushes out the least recently used one."""
    from envscope import _launch

    monkeypatch.setattr(_launch, "SOURCE_HOMES_KEPT", 2)
    homes = [tmp_path / name for name in ("A", "B", "C", "D")]
    for home in homes:
        home.mkdir()
    source = Counting()
    host = Host(homes[0], environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(source, ttl=3600)
    for home in (homes[1], homes[2], homes[1], homes[3], homes[1], homes[2]):
        with host.routed(home):
            host.build_subprocess_env()
    # B, C fetched; B reused (C now least recent); D pushes C out; B reused; C again
    assert [Path(h).name for h in source.calls] == ["B", "C", "D", "C"]


@pytest.mark.parametrize(
    ("ttl", "advances", "fetches"),
    [
        (None, [0.0, 30.0, 31.0], 3),  # no TTL: every binding fetches
        (60.0, [0.0, 30.0, 31.0], 2),  # within it reused; 61 s after the fetch fetched again
        (60.0, [0.0, 59.999], 1),  # just before it expires: reused
        (60.0, [0.0, 60.0], 2),  # the moment it expires: fetched again
        (60.0, [0.0, 30.0, 30.0], 2),  # counted from the fetch, not from the last reuse
        (math.inf, [0.0, 1e12], 1),  # no expiry (the homes' bound still holds)
    ],
)
def test_an_answer_is_reused_while_the_clock_is_before_its_expiry(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ttl: float | None,
    advances: list[float],
    fetches: int,
) -> None:
    """A warm binding within the TTL asks the source nothing: each binding after the clock
    moved by ``advance``, the answer expiring ``ttl`` s after its fetch (``_launch._now``)."""
    from envscope import _launch

    now = [1000.0]
    monkeypatch.setattr(_launch, "_now", lambda: now[0])
    launch, routed = tmp_path / "A", tmp_path / "B"
    launch.mkdir()
    routed.mkdir()
    source = Counting()
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(source, ttl=ttl)
    for advance in advances:
        now[0] += advance
        with host.routed(routed):
            assert host.build_subprocess_env()["ACME_DSN"] == "dsn-value-0123"
    assert len(source.calls) == fetches


@pytest.mark.parametrize("ttl", [-1, 0, 0.0, "60", True, math.nan, -math.inf])
def test_a_ttl_is_a_number_of_seconds(tmp_path: Path, ttl: object) -> None:
    host = Host(tmp_path, environ={}, catalog=Catalog.default())
    with pytest.raises(ConfigurationError, match="ttl"):
        host.add_secret_source(StaticSource("s", {}), ttl=ttl)  # type: ignore[arg-type]


def test_a_routed_value_s_origin_names_the_keyring_entry(
    ring: MemoryKeyring, tmp_path: Path
) -> None:
    """explain's origin for a source's value: the source and its entry, never the value."""
    ring.set_password("svc", "b-user", "b-value-0123456789")
    launch, routed = tmp_path / "A", tmp_path / "B"
    launch.mkdir()
    routed.mkdir()
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(KeyringSource("svc", {str(routed): {"B_SETTING": "b-user"}}))
    trace = Trace()
    with host.routed(routed):
        child = host.build_subprocess_env(trace=trace)
    assert child["B_SETTING"] == "b-value-0123456789"
    origin = trace.final()["B_SETTING"].origin
    assert origin is not None
    assert origin.detail == "keyring (service 'svc', user 'b-user')"
    assert "b-value" not in str(origin)
    assert source_detail(StaticSource("plain", {}), str(routed), "B_SETTING") == "plain"


@pytest.mark.parametrize("spelling", ["symlink", "relative"])
def test_a_home_key_names_the_home_however_it_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """Entries are kept under the home's identity: a symlinked or relative path names the home
    the host passes to fetch (its real path), for every source over entries."""
    real = tmp_path / "real-home"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    key = str(tmp_path / "link") if spelling == "symlink" else "real-home"
    sources = [
        KeyringSource("svc", {key: {"B_TOKEN": "b"}}),
        OnePasswordSource({key: {"B_TOKEN": "op://v/i/f"}}),
        BitwardenSource({key: {"B_TOKEN": "be8e0ad8-d545-4017-a55a-b02f014d4158"}}),
    ]
    for source in sources:
        assert source.supplied_names(str(real.resolve())) == {"B_TOKEN"}, type(source).__name__


def test_without_the_keyring_package_a_fetch_is_a_source_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The optional extra not installed: a SourceError saying so, never an ImportError."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "keyring" else real(name, *a)
    )
    with pytest.raises(SourceError, match=r"pip install envscope\[keyring\]") as raised:
        KeyringSource("svc", {"*": {"A": "a"}}).fetch("/home")
    assert raised.value.__context__ is None


@pytest.mark.parametrize("where", ["launch", "routed"])
def test_a_failure_left_unset_is_a_warning_of_that_home_s_traced_build(
    tmp_path: Path, where: str
) -> None:
    """The child lacks a name the source declares: the trace, the snapshot and explain's text
    say which and why (the SourceError's message, no value); the other home's build says
    nothing."""
    from envscope.tools import _report

    launch, routed = tmp_path / "A", tmp_path / "B"
    launch.mkdir()
    routed.mkdir()
    failing = launch if where == "launch" else routed
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(Failing(str(failing)), on_failure="unset")
    host.load_launch_env()
    traces = {}
    for home in (launch, routed):
        trace = Trace()
        with host.routed(home):
            host.build_subprocess_env(trace=trace)
        traces[home] = trace
    (warning,) = [w for w in traces[failing].context.warnings if w.kind == "source-unset"]
    assert warning.key == "ACME_DSN"
    assert "left unset" in warning.message
    assert "secret/acme" in warning.message
    other = routed if failing == launch else launch
    assert not [w for w in traces[other].context.warnings if w.kind == "source-unset"]
    snapshot = _report.snapshot_of(traces[failing], home="h", relative_to=None, key_id=None)
    text = _report.format_explain(snapshot)
    assert "ACME_DSN: left unset" in text
    assert "dsn-value" not in text


def test_two_spellings_of_one_home_are_an_error(tmp_path: Path) -> None:
    """A path and a symlink to it name one home: entries are given once, never merged away."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    entries = {str(tmp_path / "real"): {"A": "a"}, str(tmp_path / "link"): {"B": "b"}}
    with pytest.raises(ConfigurationError, match="another key already names"):
        KeyringSource("svc", entries)


def test_two_sources_of_one_name_keep_their_own_failures(tmp_path: Path) -> None:
    """A source that fails and another of the same name that answers: the failure and its
    warning stay (they were keyed by name, so the answer erased them)."""
    launch = tmp_path / "A"
    launch.mkdir()
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(Failing(str(launch)), on_failure="unset")  # named "vault"
    host.add_secret_source(StaticSource("vault", {"*": {"OTHER_SETTING": "fine-value-123"}}))
    host.load_launch_env()
    assert [f.reference for f in host.source_failures()] == ["secret/acme"]
    trace = Trace()
    host.build_subprocess_env(trace=trace)
    assert [w.key for w in trace.context.warnings if w.kind == "source-unset"] == ["ACME_DSN"]


class FailingEverywhere(Failing):
    """A source that cannot answer for any home."""

    def fetch(self, home: str) -> Mapping[str, str]:
        raise SourceError("vault", f"secret/{os.path.basename(home)}", "the vault is sealed")


def test_failures_left_unset_are_bounded_oldest_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host routing to many homes whose source fails keeps the latest failures only (each
    pushed out loses its warning, never a value): at most ``FAILURES_KEPT``."""
    import envscope._launch

    monkeypatch.setattr(envscope._launch, "FAILURES_KEPT", 3)
    launch = tmp_path / "launch"
    launch.mkdir()
    host = Host(launch, environ={"PATH": "/usr/bin"}, catalog=Catalog.default())
    host.add_secret_source(FailingEverywhere(""), on_failure="unset")
    host.load_launch_env()
    for n in range(5):
        (tmp_path / f"h{n}").mkdir()
        with host.routed(tmp_path / f"h{n}"):
            host.build_subprocess_env()
    assert [f.reference for f in host.source_failures()] == ["secret/h2", "secret/h3", "secret/h4"]
