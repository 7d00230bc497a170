"""The build memo: a repeated build returns the same child, and any changed input rebuilds."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envscope import Surface, Trace
from envscope.audit.trace import NULL_TRACE
from envscope.pipeline import build
from envscope.pipeline._delta import check_incremental
from envscope.pipeline._memo import BuildMemo
from envscope.pipeline.build import BuildRequest
from envscope.policy.sources import StaticSource
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests.conftest import HostFactory, write_home
from tests.manifests.test_manifest_scenarios import CHATX, platform_plugin

BASE = {"PATH": "/usr/bin", "CHATX_WEBHOOK_KEY": "w", "CHATX_WORKSPACE": "ws", "K": "v"}


@pytest.fixture
def stage_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the builds that run the stages (a memo hit runs none)."""
    runs = [0]
    real = build.run_build

    def counting(
        request: BuildRequest, trace: Trace = NULL_TRACE, **options: Any
    ) -> dict[str, str]:
        runs[0] += 1
        return real(request, trace, **options)

    monkeypatch.setattr(build, "run_build", counting)
    previous = check_incremental(False)  # the check runs the stages too: counted apart
    yield runs
    check_incremental(previous)


def settled() -> InstrumentedFileSystem:
    """A seam whose clock is an hour ahead: every manifest is settled, its stamp trusted."""
    return InstrumentedFileSystem(clock_offset_ns=HOUR_NS)


def test_repeated_build_runs_the_stages_once(
    make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """Within one binding, the same build twice runs the stages once and returns a fresh dict."""
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        first = host.build_subprocess_env(BASE)
        first["MUTATED"] = "by the caller"
        second = host.build_subprocess_env(BASE)
    assert stage_runs[0] == 1
    assert "MUTATED" not in second
    assert second == {k: v for k, v in first.items() if k != "MUTATED"}
    assert second is not first


@pytest.mark.parametrize(
    ("change", "expect_key", "runs"),
    [
        (lambda env: env.update(NEW="n"), "NEW", 2),
        (lambda env: env.update(K="changed"), "K", 2),  # the slot's second build: in full
        (lambda env: env.pop("K"), None, 2),
    ],
)
def test_changed_base_rebuilds(
    make_host: HostFactory,
    homes: dict[str, Path],
    stage_runs: list[int],
    change: Callable[[dict[str, str]], object],
    expect_key: str | None,
    runs: int,
) -> None:
    """A base env that differs in any key or value is built again (a slot's second build
    runs the stages: tests/pipeline/test_incremental.py has the builds made from the last)."""
    host = make_host(fs=settled())
    base = dict(BASE)
    with host.routed(homes["B"]):
        host.build_subprocess_env(base)
        change(base)
        env = host.build_subprocess_env(base)
    assert stage_runs[0] == runs
    assert {k: v for k, v in env.items() if k in base} == {
        k: v for k, v in base.items() if k in env
    }
    if expect_key is not None:
        assert env[expect_key] == base[expect_key]
    else:
        assert "K" not in env


def test_changed_options_rebuild(
    make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """Each surface, flag, extra and passthrough list is its own build."""
    host = make_host(fs=settled())
    calls: list[dict[str, object]] = [
        {},
        {"surface": Surface.CREDENTIALED},
        {"inherit_credentials": True},
        {"strip_launch_profile": False},
        {"extra": {"E": "1"}},
        {"extra": {"E": "2"}},
        {"passthrough": ["B_MARKER"]},
    ]
    with host.routed(homes["B"]):
        results = [host.build_subprocess_env(BASE, **kw) for kw in calls]  # type: ignore[arg-type]
        again = [host.build_subprocess_env(BASE, **kw) for kw in calls]  # type: ignore[arg-type]
    assert stage_runs[0] == len(calls)
    assert again == results
    assert results[4]["E"] == "1"
    assert results[5]["E"] == "2"


def test_a_new_extra_value_per_build_keeps_every_other_child(
    make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """A per-call value (``extra={"TASK_ID": n}``, new on every build) replaces its slot's
    child: more of them than the memo has slots never push out another build's child."""
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        plain = host.build_subprocess_env(BASE)
        scripted = host.build_subprocess_env(BASE, surface=Surface.SCRIPT)
        for n in range(2 * BuildMemo.MAX_SHAPES):
            assert host.build_subprocess_env(BASE, extra={"TASK_ID": str(n)})["TASK_ID"] == str(n)
        memo = host._binding.get().memo  # type: ignore[union-attr]
        runs = stage_runs[0]
        assert host.build_subprocess_env(BASE) == plain
        assert host.build_subprocess_env(BASE, surface=Surface.SCRIPT) == scripted
        again = host.build_subprocess_env(BASE, extra={"TASK_ID": str(n)})
    assert stage_runs[0] == runs  # three memo hits
    assert again["TASK_ID"] == str(n)
    assert len(memo) == 3  # one slot per shape: the two builds and the TASK_ID one


def test_each_mcp_block_keeps_its_own_child(
    make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """On the mcp surface the block's items are the slot: two servers whose blocks have the
    same keys, spawned in turn, each hit their own child (an mcp build is never incremental)."""
    host = make_host(fs=settled())
    blocks = [{"SERVER": "one", "PORT": "1"}, {"SERVER": "two", "PORT": "2"}]
    with host.routed(homes["B"]):
        first = [host.build_subprocess_env(surface=Surface.MCP, extra=b) for b in blocks]
        runs = stage_runs[0]
        again = [host.build_subprocess_env(surface=Surface.MCP, extra=b) for b in blocks]
    assert stage_runs[0] == runs == 2
    assert again == first
    assert [env["SERVER"] for env in again] == ["one", "two"]


@pytest.mark.parametrize("restore_mtime", [False, True])
def test_manifest_edit_within_one_binding_is_seen(
    make_host: HostFactory, homes: dict[str, Path], restore_mtime: bool
) -> None:
    """An in-place manifest edit (mtime restored or not) changes a held binding's next build."""
    path = platform_plugin(homes["B"], "chatx", CHATX)
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        assert "CHATX_WEBHOOK_KEY" in host.build_subprocess_env(BASE)
        assert "CHATX_WEBHOOK_KEY" in host.build_subprocess_env(BASE)
        before = os.stat(path)
        with open(path, "a") as fh:
            fh.write("  - CHATX_WEBHOOK_KEY\n")
        if restore_mtime:
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert "CHATX_WEBHOOK_KEY" not in host.build_subprocess_env(BASE)


def test_adapter_registered_within_one_binding_is_seen(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Registering an adapter for the bound home strips its secret on the very next build."""
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        assert "CHATX_WEBHOOK_KEY" in host.build_subprocess_env(BASE)
        host.register_adapter("chatx", ["CHATX_WEBHOOK_KEY"])
        assert "CHATX_WEBHOOK_KEY" not in host.build_subprocess_env(BASE)
        host.unregister_adapter("chatx")
        assert "CHATX_WEBHOOK_KEY" in host.build_subprocess_env(BASE)


def test_new_binding_never_reuses_another_bindings_build(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A second routed() of the same home with another scope gets that scope's values."""
    host = make_host(fs=settled())
    with host.routed(homes["B"], scope={"SCOPED": "one"}):
        assert host.build_subprocess_env(BASE)["SCOPED"] == "one"
    with host.routed(homes["B"], scope={"SCOPED": "two"}):
        assert host.build_subprocess_env(BASE)["SCOPED"] == "two"


def test_reloaded_managed_values_reach_a_held_binding(
    tmp_path: Path, make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Re-loading the launch env with a changed managed file changes the next routed build."""
    managed = tmp_path / "managed.env"
    managed.write_text("PINNED=one\n")
    host = make_host(fs=settled(), managed_env_file=managed)
    host.load_launch_env()
    with host.routed(homes["B"]):
        assert host.build_subprocess_env(BASE)["PINNED"] == "one"
        managed.write_text("PINNED=two\n")
        host.load_launch_env()
        assert host.build_subprocess_env(BASE)["PINNED"] == "two"


def test_supplied_names_change_the_mcp_allowlist(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """A name a secret source supplies later joins the MCP allowlist of the next unbound build."""
    environ = {"PATH": "/usr/bin", "VAULT_ROLE": "r"}
    host = make_host(environ, fs=settled())
    assert "VAULT_ROLE" not in host.build_subprocess_env(surface=Surface.MCP)
    host.add_secret_source(StaticSource("vault", {str(homes["A"]): {"VAULT_ROLE": "r"}}))
    host.load_launch_env()
    assert host.build_subprocess_env(surface=Surface.MCP)["VAULT_ROLE"] == "r"


def test_launch_env_edit_reaches_unbound_multiplex_builds(
    tmp_path: Path, make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """Under multiplex with nothing bound the residue is re-read per build: no memo is used."""
    host = make_host({"PATH": "/usr/bin", "LATE": "x"}, fs=settled(), multiplex=True)
    assert host.build_subprocess_env()["LATE"] == "x"
    write_home(tmp_path, "A", {"LATE": "declared now"})
    assert "LATE" not in host.build_subprocess_env()
    assert stage_runs[0] == 2


def test_traced_build_replays_the_same_decisions(
    make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """A repeated traced build replays its decisions: the same trace as a build run in full."""
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        first, again = Trace(), Trace()
        host.build_subprocess_env(BASE, trace=first)
        host.build_subprocess_env(BASE, trace=again)
        assert stage_runs[0] == 1
        host.build_subprocess_env(BASE)  # an untraced build is its own shape
        host.build_subprocess_env(BASE)
    assert stage_runs[0] == 2
    assert list(again) == list(first)
    assert len(first) > 0
    assert repr(again.context) == repr(first.context)
    assert again.summary() == first.summary()


def test_replay_fingerprints_with_the_callers_function(
    make_host: HostFactory, homes: dict[str, Path]
) -> None:
    """Replayed decisions carry the fingerprints of the trace they are replayed into."""
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        plain, marked = Trace(), Trace(fingerprint=lambda key, value: f"fp:{len(value)}")
        host.build_subprocess_env(BASE, trace=plain)
        host.build_subprocess_env(BASE, trace=marked)
    assert all(d.fingerprint is None for d in plain)
    assert {d.key: d.fingerprint for d in marked if d.key in BASE} == {
        key: f"fp:{len(value)}" for key, value in BASE.items()
    }


def test_traced_build_with_a_changed_env_runs_again(
    make_host: HostFactory, homes: dict[str, Path], stage_runs: list[int]
) -> None:
    """A traced build whose parent env changed records the new decisions, not the old ones."""
    host = make_host(fs=settled())
    with host.routed(homes["B"]):
        first, second = Trace(), Trace()
        host.build_subprocess_env(BASE, trace=first)
        host.build_subprocess_env({**BASE, "TELEGRAM_BOT_TOKEN": "t"}, trace=second)
    assert stage_runs[0] == 2
    assert "TELEGRAM_BOT_TOKEN" not in first.final()
    assert second.final()["TELEGRAM_BOT_TOKEN"].removed


def test_explain_twice_gives_the_same_trace(make_host: HostFactory, homes: dict[str, Path]) -> None:
    """``explain`` (fingerprinting) gives the same decisions and fingerprints on a replay."""
    host = make_host(
        fs=settled(), environ={**BASE, "ENVSCOPE_FINGERPRINT_KEY": "k-of-sixteen-chars"}
    )
    with host.routed(homes["B"]):
        first, again = host.explain(), host.explain()
    assert list(again) == list(first)
    assert any(d.fingerprint for d in first)


def test_memo_is_bounded() -> None:
    """More shapes than ``MAX_SHAPES`` start the memo over instead of growing it."""
    memo = BuildMemo()
    for i in range(BuildMemo.MAX_SHAPES + 3):
        memo.put(i, (), (), {"K": str(i)})
        assert len(memo) <= BuildMemo.MAX_SHAPES
    assert memo.lookup(BuildMemo.MAX_SHAPES + 2, (), ()) == (
        {"K": str(BuildMemo.MAX_SHAPES + 2)},
        None,
        None,
        (),
    )
    assert memo.lookup(0, (), ()) == (None, None, None, ())


def test_memo_compares_identity_then_equality() -> None:
    """A hit needs the very same derived objects and equal per-build inputs; a miss with
    the same objects hands over what the slot's build left and which equal field differs."""
    memo = BuildMemo()
    policy, snapshot, left = object(), {"K": "v"}, object()
    memo.put("shape", (policy,), (snapshot, "a"), {"K": "v"}, left=left)
    assert memo.lookup("shape", (policy,), ({"K": "v"}, "a")) == ({"K": "v"}, None, None, ())
    assert memo.lookup("shape", (object(),), (snapshot, "a")) == (None, None, None, ())
    assert memo.lookup("shape", (policy, policy), (snapshot, "a")) == (None, None, None, ())
    assert memo.lookup("other", (policy,), (snapshot, "a")) == (None, None, None, ())
    assert memo.lookup("shape", (policy,), ({"K": "w"}, "a"))[:3] == (None, None, left)
    assert memo.lookup("shape", (policy,), ({"K": "w"}, "a"))[3] == (True, False)
    assert memo.lookup("shape", (policy,), (snapshot, "b"))[2:] == (left, (False, True))


def test_a_hit_hands_out_a_copy_and_keeps_its_own() -> None:
    """The child handed out is a copy; ``put`` keeps its own: neither caller's edit reaches it."""
    memo = BuildMemo()
    child = {"K": "v"}
    memo.put("shape", (), (), child)
    child["K"] = "edited"
    got = memo.lookup("shape", (), ())[0]
    assert got == {"K": "v"}
    assert got is not None
    got["K"] = "edited again"
    assert memo.lookup("shape", (), ())[0] == {"K": "v"}


def test_every_request_field_has_a_memo_role() -> None:
    """A BuildRequest field without a memo role fails here: the memo key comes from the roles."""
    from dataclasses import fields

    from envscope.pipeline._request import Role, roles

    assert [f.name for f in fields(BuildRequest)] == [name for name, _ in roles()]
    for f in fields(BuildRequest):
        assert isinstance(f.metadata.get("memo"), Role), f"{f.name} has no memo role"


def test_the_key_follows_each_field_by_its_role(make_host: HostFactory) -> None:
    """Changing a shape, same or equal field changes the key; an owner or derived one does not."""
    from dataclasses import fields, replace

    from envscope.pipeline._request import Role, memo_key

    request = make_host()._request_here(Surface.TERMINAL, {"E": "1"}, False)
    other: dict[type, object] = {
        bool: None, str: "elsewhere", tuple: ("P",), dict: {"X": "y"}, frozenset: frozenset({"Z"}),
    }  # fmt: skip
    for f in fields(BuildRequest):
        value = getattr(request, f.name)
        changed = (
            object() if f.metadata["memo"] is Role.SAME else other.get(type(value), {"X": "y"})
        )
        if isinstance(value, bool):
            changed = not value
        if f.name == "surface":
            changed = Surface.SCRIPT
        moved = replace(request, **{f.name: changed})  # type: ignore[arg-type]
        same_key = memo_key(moved, traced=False) == memo_key(request, traced=False)
        assert same_key is (f.metadata["memo"] in (Role.OWNER, Role.DERIVED)), f.name
    assert memo_key(request, traced=True) != memo_key(request, traced=False)


def test_the_incremental_build_diffs_the_envs_and_compares_every_other_equal_field(
    make_host: HostFactory,
) -> None:
    """``undiffed_differ``: true when any equal field but the parent envs and ``extra``
    differs; the positions name those three, whatever fields the request has."""
    from envscope.pipeline._request import (
        EXTRAS_AT,
        PROCESS_AT,
        SNAPSHOT_AT,
        Role,
        memo_key,
        roles,
        undiffed_differ,
    )

    request = make_host()._request_here(Surface.TERMINAL, {"E": "1"}, False)
    key = memo_key(request, traced=False)
    names = [n for n, role in roles() if role in (Role.EQUAL, Role.KEYED)]
    assert len(names) == len(key[2])
    assert (names[SNAPSHOT_AT], names[PROCESS_AT], names[EXTRAS_AT]) == (
        "snapshot",
        "process",
        "extras",
    )
    assert key[2][SNAPSHOT_AT] is request.snapshot
    assert key[2][EXTRAS_AT] is request.extras
    for i, name in enumerate(names):
        differs = tuple(j == i for j in range(len(names)))
        assert undiffed_differ(differs) is (name not in ("snapshot", "process", "extras")), name
    assert not undiffed_differ((False,) * len(names))
