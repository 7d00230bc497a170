"""Property: an incremental build equals the full build, as mappings and in key order,
errors included.

Over random sequences of changes to one host's inputs (the process env: declared and
undeclared names, one the launch home alone declares, case twins, name-context
credentials, injection vectors, the force prefix, the scope's and the managed file's
names; the caller's ``extra``; the surface, routed or not, credential inheritance,
passthrough and grants), each build
of a host that keeps its memo (and so its incremental builds) equals the build of a
twin host made in full (a traced build always runs in full), or both raise the same
error. The suite also runs every incremental build beside the full one
(``envscope.testing.incremental_builds_checked``, tests/conftest.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import EnvscopeError, Host, Surface, Trace
from envscope.policy.formats import format_table
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem

pytestmark = pytest.mark.property

_ROOT = Path(tempfile.mkdtemp(prefix="envscope-incremental-")).resolve()
LAUNCH, PROFILE = _ROOT / "launch", _ROOT / "profile"
for _home in (LAUNCH, PROFILE):
    _home.mkdir(exist_ok=True)
(LAUNCH / ".env").write_text("TELEGRAM_BOT_TOKEN=launch-bot-token-0001\nLAUNCH_ONLY=residue\n")
(PROFILE / ".env").write_text("B_THING=profile-value\nOPENAI_API_KEY=profile-own-key-0001\n")
_PLUGIN = PROFILE / "plugins" / "platforms" / "chatx"
_PLUGIN.mkdir(parents=True, exist_ok=True)
(_PLUGIN / "plugin.yaml").write_text("name: chatx\nrequires_env:\n  - CHATX_BOT_TOKEN\n")
_LAUNCH_PLUGIN = LAUNCH / "plugins" / "platforms" / "lchat"  # the launch home's only
_LAUNCH_PLUGIN.mkdir(parents=True, exist_ok=True)
(_LAUNCH_PLUGIN / "plugin.yaml").write_text(
    "name: lchat\nrequires_env:\n  - {name: LCHAT_ROOM, secret: true}\n"
)
MANAGED = _ROOT / "managed.env"
MANAGED.write_text("ORG_FLAG=on\n")

PAT = next(f.example for f in format_table().formats if f.example.startswith("ghp_"))
NAMES = [
    "PLAIN_A", "PLAIN_B", "plain_a", "TASK_ID", "NOTE",  # plain, a case twin
    "TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY", "CHATX_BOT_TOKEN", "GITHUB_TOKEN",  # declared
    "LCHAT_ROOM",  # a secret the launch home alone declares (no credential token in the name)
    "ACME_API_TOKEN", "MY_SERVICE_PASSWORD",  # name context, when the value looks like one
    "LD_PRELOAD", "ORG_FLAG", "B_THING", "LAUNCH_ONLY", "ENVSCOPE_HOME",  # vector, pins, scope
    "_ENVSCOPE_FORCE_OPENAI_API_KEY", "_ENVSCOPE_FORCE_NOTE",  # the force prefix
]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from([
        "v1", "v2", "another-plain-value", "launch-bot-token-0001", "profile-own-key-0001",
        "x:launch-bot-token-0001@h", PAT, "Zx9Qw2Er7Ty4Ui1Op3As6Df8", "", "on", "a" * 40,
        "nul\x00inside", "é€😀", "b" * 700,  # a NUL; UTF-8 wider than a character; the cap
    ]),
    st.text(st.characters(codec="ascii", categories=["L", "N"]), max_size=10),
)  # fmt: skip
MAX_BYTES = 2048  # three of the long values are over it: builds cross the cap both ways
EXTRA_NAMES = ["TASK_ID", "NOTE", "PLAIN_B", "plain_b", "ACME_API_TOKEN", "_ENVSCOPE_FORCE_NOTE"]
# weighted towards the builds an incremental build takes (no passthrough or grant, not mcp)
BUILD = st.fixed_dictionaries(
    {
        "surface": st.sampled_from([*list(Surface), Surface.TERMINAL, Surface.WORKER]),
        "routed": st.booleans(),
        "inherit_credentials": st.booleans(),
        "extra": st.one_of(
            st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=3),
            st.dictionaries(st.sampled_from(EXTRA_NAMES), VALUES, min_size=1, max_size=3),
        ),
        "passthrough": st.sampled_from([(), (), (), ("B_THING",)]),
        "grant": st.sampled_from([(), (), (), ("TASK_ID",)]),
    }
)


def _host(environ: dict[str, str]) -> Host:
    """A host over the tree, its clock an hour ahead: the files just written are settled, so
    each ``routed()`` shares the home's scope and memo as a host's settled homes do."""
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = Host(LAUNCH, environ=environ, managed_env_file=MANAGED, fs=fs, max_env_bytes=MAX_BYTES)
    host.load_launch_env()
    return host


def _build(host: Host, call: dict[str, object], *, traced: bool) -> dict[str, str] | str:
    """The child, or the error's type and message (both sides must fail alike)."""
    kwargs = {k: v for k, v in call.items() if k != "routed"}
    grant = call["grant"]
    extra: dict[str, str] = dict(call["extra"])  # type: ignore[call-overload]
    if grant:
        extra.setdefault("TASK_ID", "granted-value")
    kwargs["extra"] = extra
    if traced:
        kwargs["trace"] = Trace()
    try:
        if call["routed"]:
            with host.routed(PROFILE):
                return host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
        return host.build_subprocess_env(**kwargs)  # type: ignore[arg-type]
    except EnvscopeError as exc:
        return f"{type(exc).__name__}: {exc}"


# a third of the builds are incremental: at least 300 histories (make fuzz: its 20,000)
@settings(max_examples=max(300, settings().max_examples))
@given(
    start=st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=8),
    calls=st.lists(BUILD, min_size=1, max_size=2),
    data=st.data(),
)
def test_incremental_builds_equal_full_builds(
    start: dict[str, str], calls: list[dict[str, object]], data: st.DataObject
) -> None:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", **start}
    env, twin_env = dict(base), dict(base)
    host, twin = _host(env), _host(twin_env)
    for _ in range(data.draw(st.integers(min_value=2, max_value=10), label="steps")):
        call = dict(data.draw(st.sampled_from(calls), label="call"))
        # mostly a new value of a key the env or extra already has (what an incremental
        # build takes), sometimes a key added or deleted
        kind = data.draw(st.sampled_from(["value"] * 6 + ["extra"] * 2 + ["add", "delete"]))
        if kind == "value" and env:
            name = data.draw(st.sampled_from(sorted(env)), label="name")
            env[name] = twin_env[name] = data.draw(VALUES, label="value")
        elif kind == "extra" and call["extra"]:
            extra: dict[str, str] = dict(call["extra"])  # type: ignore[call-overload]
            key = data.draw(st.sampled_from(sorted(extra)), label="extra key")
            call["extra"] = {**extra, key: data.draw(VALUES, label="extra value")}
        elif kind == "add":
            name = data.draw(st.sampled_from(NAMES), label="added")
            env[name] = twin_env[name] = data.draw(VALUES, label="value")
        elif kind == "delete" and len(env) > 2:
            name = data.draw(st.sampled_from(sorted(env)), label="deleted")
            del env[name], twin_env[name]
        for _ in range(2):  # the second build of the same inputs: a memo hit
            got = _build(host, call, traced=False)
            want = _build(twin, call, traced=True)
            if isinstance(got, dict) and isinstance(want, dict):
                assert list(got.items()) == list(want.items())
            else:
                assert got == want
