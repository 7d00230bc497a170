"""The fail-closed matrix: one fault at every seam call a scan makes, of every kind.

A healthy build over a realistic home (the bundled root; ``plugins/platforms/*``
with a dot directory, a ``__dunder__`` directory, a ``plugin.yml``-only plugin,
a plugin with both names, a symlinked plugin directory and a symlinked
manifest; flat ``plugins/*`` with ``kind: platform``, ``kind: memory``, a
directory without a manifest and a stray file) is run through an
``InstrumentedFileSystem`` that records every seam call. Then, for every call
index of that healthy build and every fault kind that call can show (``EACCES``,
``ENOENT``, ``ELOOP``, ``ENOTDIR``, ``EIO``; "became" a FIFO, a directory, a
socket, a symlink; a short read), a fresh ``Host`` builds a terminal child from
a parent env holding every name the healthy build declared, with that one call
failing. The build must

- raise ``ManifestError``, or
- hand the child none of the declared names, with the policy the build used
  (its trace) ``complete=False`` — or, when the fault changed nothing the scan
  learns (a stat of a missing file told "became a FIFO", an ``lstat`` told
  "became a symlink" whose target is the same regular file), complete with
  exactly the healthy declarations.

Two variants: the *first* scan of the home, and a *rescan* after a healthy
scan (the retention path). One caveat, documented in docs/manifests.md: on a
first scan in ``"deny"`` mode, a name declared outside its plugin's prefix or
without a secret suffix cannot be known while that plugin's manifest is
unreadable, so it is exempt exactly when the build's problems name its plugin
(or its root). ``"raise"`` mode and every rescan have no exemption.
"""

from __future__ import annotations

import collections
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from envscope import Catalog, Host, Trace
from envscope.errors import EnvscopeError, ManifestError
from envscope.policy._declarations import Problem, has_secret_suffix, plugin_prefix
from envscope.testing_fs import HOUR_NS, CallFault, InstrumentedFileSystem, SeamCall
from tests.manifests.test_faults import Mode

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "scan"
LINKED = """\
name: linked
requires_env:
  - LINKED_WEBHOOK_KEY
  - {name: LINKED_DSN, secret: true}
"""
SHIM = "name: shim\nrequires_env: [SHIM_API_TOKEN]\n"


@dataclass(frozen=True)
class Tree:
    """The realistic home on disk, the bundled root, and what a healthy build declares."""

    home: Path
    bundled: Path
    declared: dict[str, str]  # name -> manifest path (its origin)


def make_tree(top: Path) -> tuple[Path, Path]:
    """Copy fixtures/scan and add a symlinked plugin dir and a symlinked manifest."""
    shutil.copytree(FIXTURE / "home", top / "home", symlinks=True)
    shutil.copytree(FIXTURE / "bundled", top / "bundled", symlinks=True)
    shared = top / "shared"
    (shared / "linked").mkdir(parents=True)
    (shared / "linked" / "plugin.yaml").write_text(LINKED, encoding="utf-8")
    (shared / "shim.yaml").write_text(SHIM, encoding="utf-8")
    platforms = top / "home" / "plugins" / "platforms"
    (platforms / "linked").symlink_to(shared / "linked")
    (platforms / "shim").mkdir()
    (platforms / "shim" / "plugin.yaml").symlink_to(shared / "shim.yaml")
    return Path(os.path.realpath(top / "home")), Path(os.path.realpath(top / "bundled"))


_CATALOG: list[Catalog] = []


def catalog() -> Catalog:
    """One default catalog for every trial (loading it is the slow part of a Host)."""
    if not _CATALOG:
        _CATALOG.append(Catalog.default())
    return _CATALOG[0]


def new_host(tree: Tree, fs: InstrumentedFileSystem, mode: Mode) -> Host:
    """A fresh Host (so a fresh manifest cache) over the tree's home."""
    return Host(
        tree.home,
        environ={"PATH": "/usr/bin"},
        catalog=catalog(),
        bundled_plugins=tree.bundled,
        fs=fs,
        on_unreadable_platform=mode,
    )


@dataclass(frozen=True)
class Built:
    """One traced build: the child env and the policy it used, or the typed error."""

    env: dict[str, str] | None
    error: EnvscopeError | None
    complete: bool
    problems: tuple[Problem, ...]


def build(host: Host, base: dict[str, str]) -> Built:
    """A terminal child of the launch home, traced (a later ``policy()`` would re-check)."""
    trace = Trace()
    try:
        env = host.build_subprocess_env(base, trace=trace)
    except EnvscopeError as exc:
        return Built(None, exc, False, ())
    return Built(env, None, trace.context.complete, trace.context.problems)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """The tree, and the names (with their manifests) a healthy scan declares."""
    home, bundled = make_tree(tmp_path_factory.mktemp("matrix"))
    probe_tree = Tree(home, bundled, {})
    host = new_host(probe_tree, InstrumentedFileSystem(clock_offset_ns=HOUR_NS), "raise")
    decls = host.manifest_declarations()
    assert decls.complete
    declared = {name: d.origin.path or "" for name, d in decls.secrets.items()}
    return Tree(home, bundled, declared)


def base_env(tree: Tree) -> dict[str, str]:
    """A parent env holding every declared name, plus a plain one."""
    return {"PATH": "/usr/bin", **{name: f"fake-{name}" for name in tree.declared}}


def healthy_calls(tree: Tree, rescan: bool) -> list[SeamCall]:
    """The seam calls of a healthy build (the second one, after a racy first, for a rescan)."""
    fs = InstrumentedFileSystem(clock_offset_ns=-HOUR_NS if rescan else HOUR_NS, record=True)
    host = new_host(tree, fs, "raise")
    if rescan:
        assert build(host, base_env(tree)).complete
        fs.clock_offset_ns = HOUR_NS  # every manifest was racy: this build scans again
        fs.reset_counts()
    built = build(host, base_env(tree))
    assert built.complete
    assert built.env is not None
    assert set(tree.declared).isdisjoint(built.env)
    return list(fs.log)


def _exempt(name: str, origin: str, problems: tuple[Problem, ...]) -> bool:
    """A first-scan deny build cannot know this name: its plugin failed, no prefix covers it."""
    plugin_dir = os.path.dirname(origin)
    prefix = plugin_prefix(os.path.basename(plugin_dir))
    if name.startswith(prefix) and has_secret_suffix(name):
        return False  # the prefix denial covers it
    for problem in problems:
        if problem.plugin is None and origin.startswith(problem.path + os.sep):
            return True  # its root failed
        if problem.plugin is not None and plugin_dir in (
            problem.path,
            os.path.dirname(problem.path),
        ):
            return True  # its own plugin failed
    return False


def changes_nothing(call: SeamCall, fault: CallFault) -> bool:
    """A fault the scan cannot learn anything different from.

    A stat of a path that does not exist already fails with ``ENOENT`` (so an
    ``ENOENT``/``ENOTDIR`` is the same answer, and a "became" type never
    shows); an ``lstat`` that says "symlink" is followed by a ``stat`` of the
    very same (regular) file.
    """
    if call.op in ("stat", "lstat") and not os.path.lexists(call.path):
        return fault in (CallFault.ENOENT, CallFault.ENOTDIR) or fault.file_type is not None
    return call.op == "lstat" and fault is CallFault.BECAME_SYMLINK


def rereads(call: SeamCall, fault: CallFault) -> bool:
    """A fault that says "the manifest changed since the probe": the cache probes and reads again.

    The read found the file gone (``ENOENT``/``ENOTDIR``), no longer regular (a
    "became" type) or of another size (a short read); one fault does not persist,
    so the re-read reads the healthy file.
    """
    if call.op != "read":
        return False
    return fault in (CallFault.ENOENT, CallFault.ENOTDIR, CallFault.SHORT_READ) or (
        fault.file_type is not None
    )


def judge(
    tree: Tree, built: Built, call: SeamCall, fault: CallFault, *, mode: Mode, rescan: bool
) -> str:
    """The outcome class, or an assertion error saying what leaked."""
    if built.error is not None:
        assert isinstance(built.error, ManifestError), repr(built.error)
        return "raised ManifestError"
    assert built.env is not None
    leaked = sorted(set(tree.declared) & set(built.env))
    if built.complete:
        assert leaked == [], f"complete policy, yet leaked {leaked}"
        if rereads(call, fault):
            return "re-read (a change under the read is probed and read again)"
        assert changes_nothing(call, fault), "the fault was swallowed: the policy says complete"
        return "no effect (the fault changes nothing the scan learns)"
    if mode == "deny" and not rescan and leaked:
        leaked = [n for n in leaked if not _exempt(n, tree.declared[n], built.problems)]
        assert leaked == [], f"leaked {leaked}; problems: {[p.path for p in built.problems]}"
        return "failed closed (partial; an unread plugin's out-of-prefix name unknowable)"
    assert leaked == [], f"leaked {leaked}; problems: {[p.path for p in built.problems]}"
    return "failed closed (partial)"


@pytest.mark.parametrize("mode", ["deny", "raise"])
@pytest.mark.parametrize("rescan", [False, True], ids=["first-scan", "rescan"])
def test_one_fault_at_every_seam_call_fails_closed(tree: Tree, rescan: bool, mode: Mode) -> None:
    """Every (call index, fault kind): ManifestError, or no declared name and complete=False."""
    calls = healthy_calls(tree, rescan)
    ops = collections.Counter(c.op for c in calls)
    assert ops["scandir"] == 3
    assert ops["read"] >= 8
    assert ops["stat"] >= 1  # the symlinked manifest, followed
    base = base_env(tree)
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    for index, call in enumerate(calls):
        for fault in CallFault:
            if not CallFault.applies(call.op, fault):
                continue
            fs = InstrumentedFileSystem(
                clock_offset_ns=-HOUR_NS if rescan else HOUR_NS, record=True
            )
            host = new_host(tree, fs, mode)
            if rescan:
                assert build(host, base).complete
                fs.clock_offset_ns = HOUR_NS
                fs.reset_counts()
            fs.fail_call(index, fault)
            built = build(host, base)
            where = f"call #{index} {call.op} {call.path} <- {fault.name}"
            try:
                assert fs.fired, "the fault never fired"
                assert fs.log[index] == call, f"call #{index} was {fs.log[index]}"
                if rereads(call, fault):
                    assert call in fs.log[index + 1 :], "a change under the read was not re-read"
                outcome = judge(tree, built, call, fault, mode=mode, rescan=rescan)
            except AssertionError as exc:
                failures.append(f"{where}: {exc}")
                continue
            outcomes[outcome] += 1
            outcomes["trials"] += 1
    print(f"matrix {mode} {'rescan' if rescan else 'first-scan'}: {len(calls)} calls, {outcomes}")
    assert failures == []
    assert outcomes["failed closed (partial)"] + outcomes["raised ManifestError"] > 0


@pytest.mark.parametrize("fault", list(CallFault), ids=lambda f: f.name)
def test_fail_call_fires_once_at_the_indexed_call(tmp_path: Path, fault: CallFault) -> None:
    """fail_call(n, fault) hits the n-th call only, shaped as documented per operation."""
    target = tmp_path / "f.yaml"
    target.write_text("abcdef")
    fs = InstrumentedFileSystem(record=True)
    fs.fail_call(1, fault)
    assert fs.stat(str(target), follow_symlinks=False).st_mode == target.lstat().st_mode
    if fault.errno is not None:
        with pytest.raises(OSError, match=os.strerror(fault.errno)) as info:
            fs.read_regular(str(target), 100)
        assert info.value.errno == fault.errno
    elif fault is CallFault.SHORT_READ:
        assert fs.read_regular(str(target), 100) == b"abc"
    else:
        assert fs.read_regular(str(target), 100) is None
    assert fs.fired
    assert fs.read_regular(str(target), 100) == b"abcdef"
    assert [c.op for c in fs.log] == ["lstat", "read", "read"]
    assert CallFault.applies("scandir", fault) is (fault.errno is not None)
    assert CallFault.applies("stat", fault) is (fault is not CallFault.SHORT_READ)
    if fault.file_type is not None:
        fs.fail_call(0, fault)
        assert fs.stat(str(target)).st_mode & 0o170000 == fault.file_type
