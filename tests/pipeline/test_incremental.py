"""Which changes an incremental build takes (the stages not run again), and that it answers
as the full build does: a table over the owning function, ``build._untraced``."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envscope import EnvValueError, Host, Surface, Trace
from envscope.pipeline import _delta, decision
from envscope.pipeline._memo import BuildMemo
from envscope.policy import formats
from envscope.policy.formats import format_table
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests._write_once import rebinds_of

PAT = next(f.example for f in format_table().formats if f.example.startswith("ghp_"))
Env = dict[str, str]
Call = dict[str, Any]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    launch, profile = tmp_path / "launch", tmp_path / "profile"
    launch.mkdir()
    profile.mkdir()
    (launch / ".env").write_text("TELEGRAM_BOT_TOKEN=launch-bot-token-0001\nLAUNCH_ONLY=r\n")
    (profile / ".env").write_text("B_THING=profile-value\n")
    managed = tmp_path / "managed.env"
    managed.write_text("ORG_FLAG=on\n")
    return launch, profile, managed


def _settled(tree: tuple[Path, Path, Path], environ: Env, **options: Any) -> Host:
    """A host over the tree, its launch env loaded, every file settled (the gate engages)."""
    launch, _, managed = tree
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = Host(launch, environ=environ, managed_env_file=managed, fs=fs, **options)
    host.load_launch_env()
    return host


def _answers(monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[list[bool]]:
    """Whether each call of ``build``'s ``_delta.<name>`` answered (not None), with the
    check off: its full build beside each would count as a build of its own."""
    answered: list[bool] = []
    real = getattr(_delta, name)

    def spying(*args: Any) -> Any:
        done = real(*args)
        answered.append(done is not None)
        return done

    monkeypatch.setattr(f"envscope.pipeline.build.{name}", spying)
    previous = _delta.check_incremental(False)
    yield answered
    _delta.check_incremental(previous)


@pytest.fixture
def rebinds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every field set on a ``Template`` that already holds it (none: each is written once)."""
    return rebinds_of(monkeypatch, _delta.Template)


@pytest.fixture
def made_incrementally(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each build that found a template was made from it."""
    yield from _answers(monkeypatch, "rebuild")


def _set(name: str, value: str) -> Callable[[Env, Call], None]:
    return lambda env, call: env.__setitem__(name, value)


def _delete(name: str) -> Callable[[Env, Call], None]:
    return lambda env, call: env.__delitem__(name)


def _extra(value: str) -> Callable[[Env, Call], None]:
    return lambda env, call: call.__setitem__("extra", {"TASK_ID": value})


# (change, call, made from the last build)
CHANGES: dict[str, tuple[Callable[[Env, Call], None], Call, bool]] = {
    "a new extra value": (_extra("task-2"), {}, True),
    "a plain value": (_set("PLAIN_A", "2"), {}, True),
    "a POSIX case twin's value": (_set("plain_a", "2"), {}, True),
    "a residue name's value": (_set("LAUNCH_ONLY", "other"), {}, True),
    "a managed name's value": (_set("ORG_FLAG", "off"), {}, True),
    "a plain value, worker surface": (_set("PLAIN_A", "2"), {"surface": Surface.WORKER}, True),
    "a declared name's value": (_set("TELEGRAM_BOT_TOKEN", "another-token-0002"), {}, False),
    "a value that copies a secret": (_set("PLAIN_A", "launch-bot-token-0001"), {}, False),
    "a value that holds a credential format": (_set("PLAIN_A", PAT), {}, False),
    "a name-context credential": (_set("ACME_API_TOKEN", "Zx9Qw2Er7Ty4Ui1Op3As6Df8"), {}, False),
    "a new key": (_set("NEW_KEY", "n"), {}, False),
    "a key deleted": (_delete("plain_a"), {}, False),
    # the launch env's own vector is kept (it was not introduced): its value is plain
    "the launch env's injection vector": (_set("LD_PRELOAD", "/tmp/x.so"), {}, True),
}  # fmt: skip


@pytest.mark.parametrize("routed", [True, False], ids=["routed", "unrouted"])
@pytest.mark.parametrize("case", CHANGES)
def test_what_is_made_from_the_last_build(
    tree: tuple[Path, Path, Path],
    made_incrementally: list[bool],
    rebinds: list[str],
    case: str,
    routed: bool,
) -> None:
    """The table's changes: made from the last build or by the stages; equal to a full build.
    No build rebinds a field of a template (written once, then only read)."""
    profile = tree[1]
    change, call, incremental = CHANGES[case]
    env = {"PATH": "/usr/bin", "PLAIN_A": "1", "plain_a": "1", "LAUNCH_ONLY": "r"}
    env.update(ORG_FLAG="on", ACME_API_TOKEN="x", LD_PRELOAD="")
    twin_env = dict(env)

    host, twin = _settled(tree, env), _settled(tree, twin_env)
    call = {"extra": {"TASK_ID": "task-1"}, **call}

    def child(of: Host, traced: bool) -> dict[str, str] | str:
        kwargs = {**call, "trace": Trace()} if traced else call
        try:
            if routed:
                with of.routed(profile):
                    return of.build_subprocess_env(**kwargs)
            return of.build_subprocess_env(**kwargs)
        except EnvValueError as exc:
            return str(exc)

    child(host, False)  # the slot's first build leaves a mark, its second a template
    call_now = dict(call)
    call["extra"] = {**call["extra"], "TASK_ID": "task-0"}
    child(host, False)
    call.clear()
    call.update(call_now)
    change(env, call)
    change(twin_env, call)
    got, want = child(host, False), child(twin, True)
    assert made_incrementally == [incremental]
    assert isinstance(got, str) or list(got.items()) == list(want.items())  # type: ignore[union-attr]
    assert got == want
    assert rebinds == []


def test_a_traced_build_is_never_made_from_the_last_build(
    tree: tuple[Path, Path, Path], made_incrementally: list[bool]
) -> None:
    launch, _, managed = tree
    host = Host(launch, environ={"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    for n in range(3):
        host.build_subprocess_env(extra={"TASK_ID": str(n)}, trace=Trace())
    assert made_incrementally == []


def _left(memo: BuildMemo) -> list[object]:
    """What each slot's last build left its next (the memo's entries' last field)."""
    return [entry[-1] for entry in memo._built.values()]


def test_a_slot_built_once_keeps_no_template(
    tree: tuple[Path, Path, Path], made_incrementally: list[bool]
) -> None:
    """A template holds its build's rule: a slot built once keeps a mark, not a template,
    so a host that builds for thousands of homes once each keeps no rule per home."""
    launch, profile, managed = tree
    host = Host(launch, environ={"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with host.routed(profile) as binding:
        host.build_subprocess_env(extra={"TASK_ID": "1"})
        assert _left(binding.memo) == [_delta.FIRST_BUILD]
        host.build_subprocess_env(extra={"TASK_ID": "2"})  # the second: a template
        assert [type(left) for left in _left(binding.memo)] == [_delta.Template]
        host.build_subprocess_env(extra={"TASK_ID": "3"})  # the third: from it
    assert made_incrementally == [True]


@pytest.mark.parametrize(
    "call",
    [{"surface": Surface.MCP}, {"passthrough": ["B_THING"]}, {"grant": ["TASK_ID"]}],
    ids=["mcp", "passthrough", "grant"],
)
def test_shapes_whose_path_reads_values_take_the_full_build(
    tree: tuple[Path, Path, Path], made_incrementally: list[bool], call: Call
) -> None:
    launch, profile, managed = tree
    host = Host(launch, environ={"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with host.routed(profile):
        for n in range(3):
            host.build_subprocess_env(extra={"TASK_ID": str(n)}, **call)
    assert made_incrementally == []


def _table_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "format_table", functools.cache(formats.format_table.__wrapped__))


def _formats_unloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_delta, "_FORMATS", f"{formats.__name__}_never_loaded")
    assert _delta._FORMATS not in sys.modules


@pytest.mark.parametrize("replace", [_table_reset, _formats_unloaded], ids=["reset", "unloaded"])
def test_a_template_from_another_format_table_takes_the_full_build(
    tree: tuple[Path, Path, Path],
    made_incrementally: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    replace: Callable[[pytest.MonkeyPatch], None],
) -> None:
    """A template's rule searched with the table of its build: after ``reset_table()`` (a new
    table object), or where the module cannot be found loaded, the build runs in full."""
    launch, profile, managed = tree
    host = Host(launch, environ={"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with host.routed(profile):
        host.build_subprocess_env(extra={"TASK_ID": "1"})
        host.build_subprocess_env(extra={"TASK_ID": "2"})  # leaves a template
        replace(monkeypatch)
        child = host.build_subprocess_env(extra={"TASK_ID": "3"})
    assert made_incrementally == [False]
    assert child["TASK_ID"] == "3"


def test_a_template_answers_only_while_every_undiffed_input_is_equal(
    tree: tuple[Path, Path, Path],
) -> None:
    """``rebuild`` and ``reusable_rule`` read the memo's comparison (``differs``): any equal
    field but the parent envs and ``extra`` that differs (the names sources supplied or
    applied, an unbound build's residue) leaves the template unused, whatever it holds."""
    from envscope.pipeline._request import Role, memo_key, roles

    launch, profile, managed = tree
    host = Host(launch, environ={"PATH": "/usr/bin"}, managed_env_file=managed)
    host.load_launch_env()
    with host.routed(profile) as binding:
        host.build_subprocess_env(extra={"TASK_ID": "1"})
        host.build_subprocess_env(extra={"TASK_ID": "2"})
        (template,) = _left(binding.memo)
        assert isinstance(template, _delta.Template)
        request = host._request_here(Surface.TERMINAL, {"TASK_ID": "3"}, False)
    names = [n for n, role in roles() if role in (Role.EQUAL, Role.KEYED)]
    assert len(names) == len(memo_key(request, traced=False)[2])
    for i, name in enumerate(names):
        differs = tuple(j == i for j in range(len(names)))
        diffed = name in ("snapshot", "process", "extras")
        assert (_delta.rebuild(template, request, differs) is not None) is diffed, name
        assert (_delta.reusable_rule(template, request, differs) is not None) is diffed, name


def test_the_check_names_keys_never_values() -> None:
    """``compare`` raises naming the keys that differ, the order, or the full build's error
    type, and no value."""
    with pytest.raises(_delta.IncrementalMismatch, match=r"\['B'\]") as info:
        _delta.compare({"A": "1", "B": "secret-value-1"}, lambda: {"A": "1", "B": "secret-value-2"})
    assert "secret-value" not in str(info.value)
    with pytest.raises(_delta.IncrementalMismatch, match="the key order"):
        _delta.compare({"A": "1", "B": "2"}, lambda: {"B": "2", "A": "1"})

    def refused() -> dict[str, str]:
        raise EnvValueError("B", "the block is over the cap: secret-value-3")

    with pytest.raises(_delta.IncrementalMismatch, match="raises EnvValueError") as info:
        _delta.compare({"A": "1", "B": "secret-value-3"}, refused)
    assert "secret-value" not in str(info.value)
    _delta.compare({"A": "1"}, lambda: {"A": "1"})


CAP = 4096
# (the changed value of PLAIN_A, made from the last build): the template's block fits the cap
SIZES: dict[str, tuple[str, bool]] = {
    "the block still under the cap": ("s" * 100, True),
    "wider in UTF-8 than in characters, still under": ("é" * 900, True),
    "the block over the cap by the change": ("b" * 3000, False),
    "wider in UTF-8 than in characters, over": ("é" * 1400, False),
    "the entry over the per-entry limit": ("c" * (128 * 1024), False),
}


@pytest.mark.parametrize("case", SIZES)
def test_a_changed_value_is_checked_against_the_cap_as_a_full_build_checks_it(
    tree: tuple[Path, Path, Path], made_incrementally: list[bool], case: str
) -> None:
    """The patched child's block size is the template's resized by the changed entry: a change
    under the cap is made from the last build, one over it raises the full build's error."""
    profile = tree[1]
    value, fits = SIZES[case]
    env = {"PATH": "/usr/bin", "PLAIN_A": "1", "FILLER": "f" * 1500}
    twin_env = dict(env)
    hosts = [_settled(tree, environ, max_env_bytes=CAP) for environ in (env, twin_env)]

    def child(of: Host, traced: bool) -> dict[str, str] | str:
        try:
            with of.routed(profile):
                return of.build_subprocess_env(trace=Trace() if traced else None)
        except EnvValueError as exc:
            return str(exc)

    child(hosts[0], False)  # the slot's first build leaves a mark, its second a template
    env["PLAIN_A"] = "2"
    child(hosts[0], False)
    env["PLAIN_A"] = twin_env["PLAIN_A"] = value
    got = child(hosts[0], False)
    want = child(hosts[1], True)
    assert got == want
    assert isinstance(got, dict) is fits
    assert made_incrementally == [True] if fits else made_incrementally in ([], [False])


@pytest.fixture
def rule_reused(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each full build of a slot with a template reused its rule."""
    yield from _answers(monkeypatch, "reusable_rule")


@pytest.fixture
def decided_anew(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many entries each search-and-decide pass of stage 4 decided (``_decide_all``)."""
    counts: list[int] = []
    real = decision._decide_all

    def counting(rule: Any, entries: Any, clean: Any = None) -> Any:
        counts.append(len(entries))
        return real(rule, entries, clean)

    monkeypatch.setattr(decision, "_decide_all", counting)
    return counts


# (change, the full build reuses the last build's rule): none of these is made incrementally
FULL_BUILDS: dict[str, tuple[Callable[[Env, Call], None], bool]] = {
    "a new plain key": (_set("NEW_KEY", "n"), True),
    "a plain key deleted": (_delete("plain_a"), True),
    "a plain value that copies a secret": (_set("PLAIN_A", "launch-bot-token-0001"), True),
    "a plain value that holds a credential format": (_set("PLAIN_A", PAT), True),
    "a new declared key": (_set("GITHUB_TOKEN", "ghp-like-value-000000001"), False),
    "a declared name's value": (_set("TELEGRAM_BOT_TOKEN", "another-token-0002"), False),
    "a name-context credential": (_set("ACME_API_TOKEN", "Zx9Qw2Er7Ty4Ui1Op3As6Df8"), False),
    "a new name-context credential": (_set("MY_SERVICE_PASSWORD", "Zx9Qw2Er7Ty4Ui1Op3"), False),
}


@pytest.mark.parametrize("routed", [True, False], ids=["routed", "unrouted"])
@pytest.mark.parametrize("case", FULL_BUILDS)
def test_a_full_build_reuses_the_rule_when_it_reads_the_same_pairs(
    tree: tuple[Path, Path, Path],
    rule_reused: list[bool],
    decided_anew: list[int],
    case: str,
    routed: bool,
) -> None:
    """A full build of a slot reuses the last build's rule only when the pairs the rule reads
    (declared names, name-context credentials) are the same, in order; its child is a fresh
    full build's. A reused rule decides only the entries it never decided (the changed one
    and the one the incremental build before changed), the rest are its known verdicts."""
    profile = tree[1]
    change, reused = FULL_BUILDS[case]
    env = {"PATH": "/usr/bin", "PLAIN_A": "1", "plain_a": "1", "LAUNCH_ONLY": "r"}
    env.update(ACME_API_TOKEN="x", TELEGRAM_BOT_TOKEN="launch-bot-token-0001")
    twin_env = dict(env)
    hosts = [_settled(tree, environ) for environ in (env, twin_env)]

    def child(of: Host, traced: bool) -> dict[str, str]:
        trace = Trace() if traced else None
        if routed:
            with of.routed(profile):
                return of.build_subprocess_env(extra={"TASK_ID": "1"}, trace=trace)
        return of.build_subprocess_env(extra={"TASK_ID": "1"}, trace=trace)

    child(hosts[0], False)  # the slot's first build leaves a mark, its second a template
    env["PLAIN_A"] = "2"
    child(hosts[0], False)
    twin_env["PLAIN_A"] = "2"
    change(env, {})
    change(twin_env, {})
    decided_anew.clear()
    got = child(hosts[0], False)
    anew = sum(decided_anew)
    want = child(hosts[1], True)
    assert list(got.items()) == list(want.items())
    assert rule_reused == [reused]
    assert anew <= 2 if reused else anew >= len(got) - 2
