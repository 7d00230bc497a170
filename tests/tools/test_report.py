"""``explain`` names every rule's origin; ``diff``; no value in any output."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from envscope import (
    Action,
    EnvscopeError,
    Host,
    OriginKind,
    Reason,
    StaticSource,
    Surface,
    Trace,
)
from envscope.cli import main
from envscope.tools._report import (
    diff_snapshots,
    fingerprints_comparable,
    format_diff,
    format_explain,
    snapshot_of,
)
from tests.conftest import HostFactory

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def test_explain_names_every_origin(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """One decision per input key, with action, stage and the origin of its rule."""
    managed = homes["root"] / "managed.env"
    managed.write_text("ORG_FLAG=org\n")
    plugin = homes["B"] / "plugins" / "platforms" / "chatx"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: chatx\nrequires_env:\n  - CHATX_BOT_TOKEN\n")
    host = make_host(
        {"PATH": "/b", "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars", "OPERATOR": "o"},
        managed_env_file=managed,
    )
    a = str(homes["A"])
    host.add_secret_source(
        StaticSource("vault", {a: {"VAULT_X": "v"}, str(homes["B"]): {"VAULT_X": "w"}})
    )
    host.load_launch_env()
    base = {**host._environ, "TELEGRAM_BOT_TOKEN": "t", "CHATX_BOT_TOKEN": "c"}
    with host.routed(homes["B"]):
        trace = host.explain(base)
    final = trace.final()
    assert set(final) == {k.upper() for k in base} | {"B_MARKER", "ENVSCOPE_HOME"}
    kinds = {k: (d.action, d.origin.kind if d.origin else None) for k, d in final.items()}
    assert kinds["TELEGRAM_BOT_TOKEN"] == (Action.STRIPPED, OriginKind.CATALOG)
    assert kinds["CHATX_BOT_TOKEN"] == (Action.STRIPPED, OriginKind.MANIFEST)
    assert kinds["A_MARKER"] == (Action.STRIPPED, OriginKind.LAUNCH_DOTENV)
    assert kinds["VAULT_X"] == (Action.ADDED, OriginKind.SECRET_SOURCE)
    assert kinds["ORG_FLAG"] == (Action.KEPT, OriginKind.MANAGED)  # the launch applied it
    assert kinds["B_MARKER"] == (Action.ADDED, OriginKind.SCOPE)
    assert kinds["OPERATOR"] == (Action.KEPT, None)
    assert final["CHATX_BOT_TOKEN"].origin is not None
    assert str(plugin / "plugin.yaml") in str(final["CHATX_BOT_TOKEN"].origin)
    assert trace.context.routed is True
    assert trace.context.home == str(homes["B"])


def test_summary_line(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """Trace.summary() counts declared secrets and launch residue in one loggable line."""
    host = make_host({"PATH": "/b"})
    host.load_launch_env()
    trace = Trace()
    with host.routed(homes["B"]):
        host.build_subprocess_env(
            {**host._environ, "OPENAI_API_KEY": "k", "GH_TOKEN": "g"}, trace=trace
        )
    assert trace.summary() == (
        "envscope removed 4 variables for this child: 2 declared secrets, 2 launch residue; "
        "run `envscope explain` for details"
    )
    one = Trace()
    make_host().build_subprocess_env({"GH_TOKEN": "g", "K": "v"}, trace=one)
    assert one.summary().startswith(
        "envscope removed 1 variable for this child: 1 declared secret, 0 launch residue;"
    )
    mcp = Trace()
    make_host().build_subprocess_env({"EDITOR": "vi"}, surface=Surface.MCP, trace=mcp)
    assert "1 by surface policy" in mcp.summary()


TOKEN_VALUE = "q8Zr2LwX7nVb4TkY9sHd3FgJ6mPc1RxE"


@pytest.mark.parametrize(
    ("entries", "part"),
    [
        ({"ACME_API_TOKEN": TOKEN_VALUE}, "1 undeclared credential,"),
        ({"A_TOKEN": TOKEN_VALUE, "B_SECRET": TOKEN_VALUE[::-1]}, "2 undeclared credentials,"),
    ],
    ids=["one", "two"],
)
def test_the_summary_never_calls_an_undeclared_credential_declared(
    make_host: HostFactory, entries: dict[str, str], part: str
) -> None:
    """A key stripped by name context is counted as what it is, not as a declared secret."""
    trace = Trace()
    make_host(name_context=True).build_subprocess_env({"PATH": "/b", **entries}, trace=trace)
    assert trace.summary() == (
        f"envscope removed {len(entries)} variable{'s' if len(entries) > 1 else ''} for this "
        f"child: 0 declared secrets, {part} 0 launch residue; run `envscope explain` for details"
    )


def test_diff_of_two_builds(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """``diff`` lists added, removed and changed keys with the rule; values never shown."""
    host = make_host(
        {"PATH": "/b", "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars", "SHARED": "one-value"}
    )
    base = dict(host._environ)
    kid = host.fingerprint_key_id()
    a = snapshot_of(host.explain(base), home="A", key_id=kid)
    with host.routed(homes["B"], scope={"SHARED": "other-value", "NEW": "n-value"}):
        b = snapshot_of(host.explain({**base, "OPENAI_API_KEY": "k"}), home="B", key_id=kid)
    entries = diff_snapshots(a, b)
    changes = [(e.key, e.change) for e in entries]
    assert changes == [("ENVSCOPE_HOME", "added"), ("NEW", "added"), ("SHARED", "changed")]
    assert "home-var" in entries[0].rule(("A", "B"))
    assert entries[0].a is None
    assert entries[0].b is not None
    assert entries[2].b is not None
    assert entries[2].b["reason"] == "scope-value"
    text = format_diff(entries, ("A", "B")) + format_explain(b)
    for value in ("one-value", "other-value", "n-value"):
        assert value not in text


@pytest.mark.parametrize("b_key", ["another-key-of-enough-length", None])
def test_diff_under_different_keys_says_so(make_host: HostFactory, b_key: str | None) -> None:
    """Snapshots under different (or unnamed) keys: keys in both are incomparable, with a note."""
    env = {"PATH": "/b", "SHARED": "one-value", "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"}
    host_a = make_host(env)
    host_b = make_host({**env, "ENVSCOPE_FINGERPRINT_KEY": b_key or "x-of-sixteen-chars!"})
    a = snapshot_of(host_a.explain(), home="A", key_id=host_a.fingerprint_key_id())
    b_id = None if b_key is None else host_b.fingerprint_key_id()
    b = snapshot_of(host_b.explain({**env, "ADDED_KEY": "v"}), home="B", key_id=b_id)
    assert a["keys"]["SHARED"]["fingerprint"] != b["keys"]["SHARED"]["fingerprint"]
    entries = diff_snapshots(a, b)
    changes = {(e.key, e.change) for e in entries}
    assert ("ADDED_KEY", "added") in changes
    assert {("SHARED", "incomparable"), ("PATH", "incomparable")} <= changes
    assert not {change for _, change in changes} & {"changed"}
    assert not fingerprints_comparable(a, b)
    text = format_diff(entries, ("A", "B"), comparable=False)
    assert "different fingerprint keys" in text
    assert "no differences" not in text
    assert "incomparable" in text.splitlines()[-1]


def _secret_values() -> set[str]:
    """Every value of 8+ characters in the fixtures' dotenv files, plus planted markers."""
    values = {"xoxb-4471-planted-secret"}
    for path in FIXTURES.rglob("*"):
        if path.is_file() and (path.name == ".env" or path.suffix == ".env"):
            for line in path.read_text(errors="replace").splitlines():
                if "=" in line and not line.lstrip().startswith("#"):
                    value = line.split("=", 1)[1].strip().strip("'\"")
                    if len(value) >= 8 and "$" not in value:
                        values.add(value)
    return values


def test_no_value_in_any_output(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """CLI output, log records and exception messages never hold a fixture's value."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("ENVSCOPE_FINGERPRINT_KEY", "k-of-sixteen-chars")
    monkeypatch.chdir(ROOT)
    config = str(FIXTURES / "demo" / "envscope.yaml")
    texts: list[str] = []
    for argv in (
        ["explain", "--home", "work"],
        ["explain", "--home", "work", "--surface", "credentialed", "--json"],
        ["explain", "--home", "personal", "--surface", "mcp"],
        ["snapshot", "--home", "work", "-o", str(tmp_path / "s.json")],
        ["diff", "home:work", "home:personal/credentialed"],
        ["scan"],
    ):
        main(["--config", config, *argv])
    for bad in sorted((FIXTURES / "manifests" / "bad").iterdir()):
        plugin = tmp_path / "plugins" / bad.stem
        plugin.mkdir(parents=True, exist_ok=True)
        (plugin / "plugin.yaml").write_bytes(bad.read_bytes())
        main(["scan", "--plugin", str(plugin)])
    texts.append((tmp_path / "s.json").read_text())
    errors = _exercise_errors(tmp_path)
    out, err = capsys.readouterr()
    texts += [out, err, *errors, *(r.getMessage() for r in caplog.records)]
    blob = "\n".join(texts)
    assert "TELEGRAM_BOT_TOKEN" in blob  # the battery really ran
    leaked = sorted(v for v in _secret_values() if v in blob)
    assert leaked == []


def _exercise_errors(tmp_path: Path) -> list[str]:
    """Provoke every kind of error with secret-looking values and collect the messages."""
    messages: list[str] = []
    home = tmp_path / "home"
    home.mkdir()
    cases = ["A=1\nB='fake-demo-telegram-token\n", 'A="fake-demo-chatx-signing\x00"\n']
    for text in cases:
        (home / ".env").write_text(text)
        try:
            Host(home, environ={}).load_launch_env()
        except EnvscopeError as exc:
            messages.append(str(exc))
    host = Host(home, environ={})
    for extra in ({"K": ["fake-demo-openai-key-work"]}, {"K=V": "fake-demo-openai-key-work"}):
        try:
            host.build_subprocess_env({}, extra=extra)
        except EnvscopeError as exc:
            messages.append(str(exc))
    assert len(messages) == 4
    return messages


def test_case_twin_in_child_is_recorded_kept(make_host: HostFactory) -> None:
    """A key whose case twin was dropped still gets a final 'kept' decision."""
    trace = make_host().explain({"Foo": "1", "FOO": "2"})
    assert trace.final()["FOO"].action is Action.KEPT
    assert trace.final()["FOO"].reason is Reason.INHERITED


def test_the_summary_tells_surface_policy_from_other_rules(make_host: HostFactory) -> None:
    """An exported shell function in an MCP block is no surface policy: counted by other rules."""
    trace = Trace()
    make_host().build_subprocess_env(
        {"PATH": "/b"}, surface=Surface.MCP, extra={"SRV_X": "() { echo x; }"}, trace=trace
    )
    assert trace.final()["SRV_X"].removed
    assert "1 by other rules" in trace.summary()
    assert "by surface policy" not in trace.summary()
