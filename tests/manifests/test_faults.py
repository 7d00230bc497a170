"""File-system faults under a Host: every child build fails closed, names the path, never hangs.

Faults are injected two ways: through the ``InstrumentedFileSystem`` seam
(any errno on any operation, deterministic) and for real, as uid 65534 with
``chmod 000`` (root ignores modes, so only an unprivileged run proves them).

The home ``B`` holds a platform plugin ``chatx`` declaring
``CHATX_SIGNING_SECRET`` and ``CHATX_WEBHOOK_KEY``, and a flat ``kind: platform``
plugin ``relay`` declaring ``RELAY_API_TOKEN``. Fail closed means: a build
either raises a typed error naming the failing path, or returns a child env
holding none of the declared names — nor, for a failing plugin, any
secret-suffixed name under its prefix (``CHATX_ROTATED_TOKEN``) — with the
problem recorded on the policy, naming the path.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from envscope import Catalog, Host
from envscope.errors import EnvscopeError, ManifestError
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests._privdrop import give_to_nobody, nobody_tree, run_as_nobody
from tests._watchdog import run_with_watchdog

Mode = Literal["deny", "raise"]
WATCHDOG_S = 2.0

CHATX = """\
name: chatx
kind: platform
requires_env:
  - name: CHATX_SIGNING_SECRET
    secret: true
  - CHATX_WEBHOOK_KEY
  - CHATX_WORKSPACE
"""
RELAY = """\
name: relay
kind: platform
requires_env: [RELAY_API_TOKEN, RELAY_MODE]
"""
CHATX_DECLARED = frozenset({"CHATX_SIGNING_SECRET", "CHATX_WEBHOOK_KEY"})
CHATX_PREFIX_ONLY = frozenset({"CHATX_ROTATED_TOKEN"})  # secret-suffixed, declared by nobody
RELAY_DECLARED = frozenset({"RELAY_API_TOKEN"})
RELAY_PREFIX_ONLY = frozenset({"RELAY_SPARE_SECRET"})
CATALOG_SECRETS = frozenset({"TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY"})
PLAIN = frozenset({"PATH", "CHATX_WORKSPACE", "RELAY_MODE", "EDITOR"})
BASE = {
    name: f"fake-{name}"
    for name in (
        CHATX_DECLARED
        | CHATX_PREFIX_ONLY
        | RELAY_DECLARED
        | RELAY_PREFIX_ONLY
        | CATALOG_SECRETS
        | PLAIN
    )
}

PLATFORMS = "plugins/platforms"
CHATX_DIR = "plugins/platforms/chatx"
CHATX_MANIFEST = "plugins/platforms/chatx/plugin.yaml"
RELAY_DIR = "plugins/relay"
RELAY_MANIFEST = "plugins/relay/plugin.yaml"


def make_tree(top: Path) -> tuple[Path, Path]:
    """Launch home A (empty) and home B with the chatx and relay plugins; returns (A, B)."""
    launch = top / "A"
    launch.mkdir(parents=True)
    home = top / "B"
    for rel, text in ((CHATX_MANIFEST, CHATX), (RELAY_MANIFEST, RELAY)):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Path(os.path.realpath(launch)), Path(os.path.realpath(home))


def make_host(launch: Path, mode: Mode, fs: InstrumentedFileSystem | None = None) -> Host:
    """A Host over A with a plain-dict environ and the default catalog."""
    return Host(
        launch,
        environ={"PATH": "/usr/bin"},
        catalog=Catalog.default(),
        fs=fs,
        on_unreadable_platform=mode,
    )


def build(host: Host, home: Path) -> dict[str, str]:
    """One terminal child routed to ``home`` (empty scope), under the watchdog."""

    def go() -> dict[str, str]:
        with host.routed(home, scope={}):
            return host.build_subprocess_env(BASE, strip_launch_profile=False)

    result = run_with_watchdog(go)
    assert isinstance(result, dict)
    return result


@dataclass(frozen=True)
class Outcome:
    """What one build gave: a child env, or a typed error; plus the policy's state."""

    env: dict[str, str] | None
    error: EnvscopeError | None
    complete: bool | None
    problem_paths: tuple[str, ...]


def attempt(host: Host, home: Path) -> Outcome:
    """Build once and read the policy, catching only envscope's typed errors."""
    try:
        env = build(host, home)
    except EnvscopeError as exc:
        return Outcome(None, exc, None, ())
    policy = host.policy(home)
    return Outcome(env, None, policy.complete, tuple(p.path for p in policy.problems))


def assert_fails_closed(
    outcome: Outcome, *, home: Path, path: str, forbidden: frozenset[str]
) -> None:
    """A typed error naming ``path``, or an env without ``forbidden`` and a problem naming it."""
    where = str(home / path)
    if outcome.error is not None:
        assert isinstance(outcome.error, ManifestError)
        assert outcome.error.path == where
        return
    assert outcome.env is not None
    leaked = sorted(forbidden & set(outcome.env))
    assert leaked == []
    assert CATALOG_SECRETS.isdisjoint(outcome.env)
    assert outcome.complete is False
    assert where in outcome.problem_paths


# -- the fault table (seam) -----------------------------------------------------------------

Inject = Callable[[InstrumentedFileSystem, Path], None]


def _inject(rel: str, err: int, *ops: Literal["scandir", "stat", "open"]) -> Inject:
    def inject(fs: InstrumentedFileSystem, home: Path) -> None:
        fs.inject(home / rel, err, ops=ops or ("scandir", "stat", "open"))

    return inject


@dataclass(frozen=True)
class Fault:
    """One injected fault: where it is named, and which names it must keep from a child."""

    inject: Inject
    path: str  # the path the error or problem names (relative to the home)
    first_scan_forbidden: frozenset[str]  # secrets a first scan can know to deny
    fatal: bool  # under a platform root: raises in "raise" mode


PLUGIN_FAILED = CHATX_DECLARED | CHATX_PREFIX_ONLY
FAULTS: dict[str, Fault] = {
    "root EACCES": Fault(_inject(PLATFORMS, errno.EACCES, "scandir"), PLATFORMS, frozenset(), True),
    "root ENOTDIR": Fault(
        _inject(PLATFORMS, errno.ENOTDIR, "scandir"), PLATFORMS, frozenset(), True
    ),
    "root EIO": Fault(_inject(PLATFORMS, errno.EIO, "scandir"), PLATFORMS, frozenset(), True),
    "plugin dir EACCES": Fault(
        lambda fs, home: fs.deny_dir(home / CHATX_DIR), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "manifest EACCES": Fault(
        lambda fs, home: fs.deny_file(home / CHATX_MANIFEST), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "manifest ELOOP on every op": Fault(
        _inject(CHATX_MANIFEST, errno.ELOOP), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "manifest ELOOP on open": Fault(
        _inject(CHATX_MANIFEST, errno.ELOOP, "open"), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "manifest ENOTDIR on open": Fault(
        _inject(CHATX_MANIFEST, errno.ENOTDIR, "open"), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "manifest EIO on read": Fault(
        _inject(CHATX_MANIFEST, errno.EIO, "open"), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "manifest EIO on stat": Fault(
        _inject(CHATX_MANIFEST, errno.EIO, "stat"), CHATX_MANIFEST, PLUGIN_FAILED, True
    ),
    "flat plugin manifest EACCES": Fault(
        lambda fs, home: fs.deny_file(home / RELAY_MANIFEST),
        RELAY_MANIFEST,
        RELAY_DECLARED | RELAY_PREFIX_ONLY,
        False,
    ),
    "flat plugin dir EIO": Fault(
        lambda fs, home: fs.inject(home / RELAY_DIR, errno.EIO, ops=("stat", "open"), under=True),
        RELAY_MANIFEST,
        RELAY_DECLARED | RELAY_PREFIX_ONLY,
        False,
    ),
}


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """(launch home A, home B) on disk."""
    return make_tree(tmp_path)


def seam() -> InstrumentedFileSystem:
    """A seam whose clock is an hour ahead (every manifest settled, not racy)."""
    return InstrumentedFileSystem(clock_offset_ns=HOUR_NS)


@pytest.mark.parametrize("mode", ["deny", "raise"])
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_on_first_scan_fails_closed(tree: tuple[Path, Path], name: str, mode: Mode) -> None:
    """A fault before any healthy scan: a typed error or a problem; prefix-denied names kept."""
    launch, home = tree
    fault = FAULTS[name]
    fs = seam()
    fault.inject(fs, home)
    host = make_host(launch, mode, fs)
    outcome = attempt(host, home)
    if mode == "raise" and fault.fatal:
        assert isinstance(outcome.error, ManifestError)
    else:
        assert outcome.error is None
    assert_fails_closed(outcome, home=home, path=fault.path, forbidden=fault.first_scan_forbidden)
    if fault.path == PLATFORMS and outcome.env is not None:
        # An unlistable root names no plugin, so a first scan has no prefix to deny; the
        # other root's plugin (relay) is still read and still stripped.
        assert RELAY_DECLARED.isdisjoint(outcome.env)


def touch_manifests(home: Path) -> None:
    """Append a comment to both manifests (a new size, mtime and ctime: a new stamp)."""
    for manifest in (CHATX_MANIFEST, RELAY_MANIFEST):
        with open(home / manifest, "a", encoding="utf-8") as fh:
            fh.write("# edited\n")


@pytest.mark.parametrize("mode", ["deny", "raise"])
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_after_healthy_scan_keeps_every_name(
    tree: tuple[Path, Path], name: str, mode: Mode
) -> None:
    """A fault after a healthy scan (and an edit forcing a rescan) keeps every name, then heals."""
    launch, home = tree
    fault = FAULTS[name]
    fs = seam()
    host = make_host(launch, mode, fs)
    healthy = attempt(host, home)
    assert healthy.env is not None
    assert (CHATX_DECLARED | RELAY_DECLARED).isdisjoint(healthy.env)
    assert healthy.env["CHATX_ROTATED_TOKEN"] == "fake-CHATX_ROTATED_TOKEN"
    assert healthy.complete is True
    fault.inject(fs, home)
    touch_manifests(home)  # change the stamp, so the next build reads (and hits the fault)
    for _ in range(2):
        outcome = attempt(host, home)
        forbidden = CHATX_DECLARED | RELAY_DECLARED | fault.first_scan_forbidden
        assert_fails_closed(outcome, home=home, path=fault.path, forbidden=forbidden)
    fs.heal()
    touch_manifests(home)  # a real fix (chmod back, a rewrite) changes the ctime too
    healed = attempt(host, home)
    assert healed.env is not None
    assert (CHATX_DECLARED | RELAY_DECLARED).isdisjoint(healed.env)
    assert healed.complete is True


class VanishingFileSystem(InstrumentedFileSystem):
    """ENOENT between scandir and open: the victim disappears just before ``read_regular``.

    ``once=False``: it is renamed aside for the read and put back after (a
    file that flickers under a non-atomic writer; every read fails).
    ``once=True``: it is deleted for good on the first read.
    """

    def __init__(self, victim: Path, *, once: bool) -> None:
        super().__init__(clock_offset_ns=HOUR_NS)
        self.victim = os.path.normpath(victim)
        self.once = once
        self.armed = True
        self.vanished = 0

    def read_regular(self, path: str, max_bytes: int) -> bytes | None:
        """Make the victim vanish, then read it (which fails with ENOENT)."""
        if os.path.normpath(path) != self.victim or not self.armed:
            return super().read_regular(path, max_bytes)
        self.vanished += 1
        if self.once:
            self.armed = False
            os.unlink(path)
            return super().read_regular(path, max_bytes)
        aside = f"{path}.aside"
        os.rename(path, aside)
        try:
            return super().read_regular(path, max_bytes)
        finally:
            os.rename(aside, path)


@pytest.mark.parametrize("warm", [False, True], ids=["first-scan", "after-healthy-scan"])
@pytest.mark.parametrize("mode", ["deny", "raise"])
def test_manifest_vanishing_between_scandir_and_open_fails_closed(
    tree: tuple[Path, Path], mode: Mode, warm: bool
) -> None:
    """ENOENT at open after the probe saw the manifest: typed error or problem; names kept."""
    launch, home = tree
    fs = VanishingFileSystem(home / CHATX_MANIFEST, once=False)
    fs.armed = not warm
    host = make_host(launch, mode, fs)
    if warm:
        assert attempt(host, home).complete is True
        fs.armed = True
        touch_manifests(home)  # change the stamp: the next build reads again
    outcome = attempt(host, home)
    assert fs.vanished >= 1
    if mode == "raise":
        assert isinstance(outcome.error, ManifestError)
    assert_fails_closed(outcome, home=home, path=CHATX_MANIFEST, forbidden=PLUGIN_FAILED)


@pytest.mark.parametrize("mode", ["deny", "raise"])
def test_manifest_deleted_between_scandir_and_open_then_released(
    tree: tuple[Path, Path], mode: Mode
) -> None:
    """A manifest deleted under the scan is probed again in the same check: a deleted plugin."""
    launch, home = tree
    fs = VanishingFileSystem(home / CHATX_MANIFEST, once=True)
    host = make_host(launch, mode, fs)
    first = attempt(host, home)  # the re-probe finds it really gone: released, no error
    assert fs.vanished == 1
    for outcome in (first, attempt(host, home)):
        assert outcome.env is not None
        assert outcome.complete is True
        assert outcome.env["CHATX_SIGNING_SECRET"] == "fake-CHATX_SIGNING_SECRET"
        assert RELAY_DECLARED.isdisjoint(outcome.env)


# -- a manifest replaced by something that is not a regular file -------------------------------


def _replace_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.fixture
def short_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """chdir helper: AF_UNIX paths are limited to ~108 bytes, so bind by a relative name."""

    def chdir(where: Path) -> None:
        monkeypatch.chdir(where)

    return chdir


@pytest.mark.parametrize("kind", ["directory", "fifo", "socket"])
def test_manifest_replaced_by_non_regular_file_never_hangs_and_is_never_opened(
    tree: tuple[Path, Path], kind: str, short_cwd: Callable[[Path], None]
) -> None:
    """A non-regular plugin.yaml is never opened, never hangs, and fails closed.

    It is a recorded problem naming the path: in "raise" mode a ManifestError
    (a platform root), in "deny" mode the plugin's names stay stripped.
    """
    launch, home = tree
    fs = seam()
    host = make_host(launch, "raise", fs)
    assert CHATX_DECLARED.isdisjoint(build(host, home))
    manifest = home / CHATX_MANIFEST
    holder: list[socket.socket] = []
    if kind == "directory":
        _replace_with_directory(manifest)
    elif kind == "fifo":
        _replace_with_fifo(manifest)
    else:
        manifest.unlink()
        short_cwd(manifest.parent)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("plugin.yaml")
        sock.listen(1)
        holder.append(sock)
    try:
        fs.reset_counts()
        outcome = attempt(host, home)
        assert str(manifest) not in fs.opened
        assert isinstance(outcome.error, ManifestError)
        assert outcome.error.path == str(manifest)
        denied = attempt(make_host(launch, "deny", fs), home)
        assert str(manifest) not in fs.opened
        assert denied.env is not None
        assert denied.complete is False
        assert CHATX_DECLARED.isdisjoint(denied.env)
        assert str(manifest) in denied.problem_paths
    finally:
        for sock in holder:
            sock.close()


# -- the swap race ---------------------------------------------------------------------------

# Flow style on the first line: every prefix of either file is invalid YAML or declares the
# shared name, so a torn read can only fail closed (see the report on in-place writers).
SWAP_V1 = "requires_env: [CHATX_SHARED_SECRET, CHATX_OLD_TOKEN]\nname: chatx\n"
SWAP_V2 = "requires_env: [CHATX_SHARED_SECRET, CHATX_NEW_TOKEN, CHATX_NEW_SECRET]\nname: chatx\n"
SHARED = frozenset({"CHATX_SHARED_SECRET"})
ONLY_V1 = frozenset({"CHATX_OLD_TOKEN"})
ONLY_V2 = frozenset({"CHATX_NEW_TOKEN", "CHATX_NEW_SECRET"})
SWAP_PREFIX_ONLY = frozenset({"CHATX_ROTATED_TOKEN"})
SWAP_NAMES = SHARED | ONLY_V1 | ONLY_V2 | SWAP_PREFIX_ONLY
SWAP_BASE = {name: f"fake-{name}" for name in SWAP_NAMES | {"PATH", "CHATX_WORKSPACE"}}


def classify(env: dict[str, str]) -> str:
    """Which policy a child env is consistent with: v1, v2, partial — or 'inconsistent'."""
    stripped = SWAP_NAMES - set(env)
    if "CHATX_WORKSPACE" not in env:
        return "inconsistent"
    if stripped == SHARED | ONLY_V1:
        return "v1"
    if stripped == SHARED | ONLY_V2:
        return "v2"
    if stripped == SWAP_NAMES:
        return "partial"
    return "inconsistent"


def write_in_place(path: Path, text: str) -> None:
    """Truncate and rewrite the same inode (one write call)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_atomically(path: Path, text: str) -> None:
    """Write a sibling temp file and os.replace it over the manifest."""
    tmp = path.with_name("plugin.yaml.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


SWAP_ITERATIONS = 1000


@pytest.mark.no_cover  # a race stress run: the fault tables measure these paths
@pytest.mark.parametrize("mode", ["deny", "raise"])
def test_swap_race_each_build_sees_one_whole_policy(tmp_path: Path, mode: Mode) -> None:
    """1,000 builds while another thread swaps (os.replace) and rewrites the manifest in place.

    Every build sees v1, v2 or a failing-closed partial scan (or, in raise
    mode, a ManifestError naming the manifest) — never a mix that lets the
    name both versions declare, or either version's own name, through.
    """
    launch, home = make_tree(tmp_path)
    manifest = home / CHATX_MANIFEST
    manifest.write_text(SWAP_V1)
    host = make_host(launch, mode)  # the real fs and clock: fresh manifests are racy, rescanned
    stop = threading.Event()
    failures: list[BaseException] = []
    writes = [0]

    def writer() -> None:
        try:
            while not stop.is_set():
                i = writes[0]
                text = SWAP_V2 if i % 2 == 0 else SWAP_V1
                (write_atomically if i % 4 < 2 else write_in_place)(manifest, text)
                writes[0] = i + 1
                time.sleep(0)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            failures.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen: dict[str, int] = {}
    try:
        for _ in range(SWAP_ITERATIONS):
            error: ManifestError | None = None
            try:
                with host.routed(home, scope={}):
                    env = host.build_subprocess_env(SWAP_BASE, strip_launch_profile=False)
            except ManifestError as exc:
                error = exc
            if error is not None:
                assert mode == "raise"
                assert error.path == str(manifest)
                kind = "error"
            else:
                kind = classify(env)
                assert kind != "inconsistent", sorted(SWAP_NAMES & set(env))
            seen[kind] = seen.get(kind, 0) + 1
    finally:
        stop.set()
        thread.join(timeout=WATCHDOG_S)
    assert not thread.is_alive()
    assert failures == []
    assert writes[0] >= 4
    assert seen.get("v1", 0) > 0
    assert seen.get("v2", 0) > 0
    assert sum(seen.values()) == SWAP_ITERATIONS


# -- for real, as uid 65534 -----------------------------------------------------------------------

# (id, actions, mode, warm, path named, names that must not reach the child, fatal)
RealCase = tuple[str, list[list[str]], Mode, bool, str, frozenset[str], bool]
REAL: list[RealCase] = [
    ("root EACCES, first scan", [["chmod", PLATFORMS, "000"]], "raise", False, PLATFORMS,
     frozenset(), True),
    ("root EACCES, first scan, deny", [["chmod", PLATFORMS, "000"]], "deny", False, PLATFORMS,
     RELAY_DECLARED, True),
    ("root EACCES after a healthy scan", [["chmod", PLATFORMS, "000"]], "deny", True, PLATFORMS,
     CHATX_DECLARED | RELAY_DECLARED, True),
    ("root replaced by a file after a healthy scan", [["file", PLATFORMS]], "deny", True,
     PLATFORMS, CHATX_DECLARED | RELAY_DECLARED, True),
    ("plugin dir EACCES, first scan", [["chmod", CHATX_DIR, "000"]], "deny", False,
     CHATX_MANIFEST, PLUGIN_FAILED | RELAY_DECLARED, True),
    ("plugin dir EACCES, first scan, raise", [["chmod", CHATX_DIR, "000"]], "raise", False,
     CHATX_MANIFEST, PLUGIN_FAILED, True),
    ("plugin dir EACCES after a healthy scan", [["chmod", CHATX_DIR, "000"]], "deny", True,
     CHATX_MANIFEST, PLUGIN_FAILED | RELAY_DECLARED, True),
    ("manifest EACCES, first scan", [["chmod", CHATX_MANIFEST, "000"]], "deny", False,
     CHATX_MANIFEST, PLUGIN_FAILED | RELAY_DECLARED, True),
    ("manifest EACCES, first scan, raise", [["chmod", CHATX_MANIFEST, "000"]], "raise", False,
     CHATX_MANIFEST, PLUGIN_FAILED, True),
    ("manifest EACCES after a healthy scan", [["chmod", CHATX_MANIFEST, "000"]], "deny", True,
     CHATX_MANIFEST, PLUGIN_FAILED | RELAY_DECLARED, True),
    ("flat manifest EACCES, raise", [["chmod", RELAY_MANIFEST, "000"]], "raise", False,
     RELAY_MANIFEST, RELAY_DECLARED | RELAY_PREFIX_ONLY | CHATX_DECLARED, False),
    ("flat plugin dir EACCES after a healthy scan", [["chmod", RELAY_DIR, "000"]], "raise", True,
     RELAY_MANIFEST, RELAY_DECLARED | RELAY_PREFIX_ONLY | CHATX_DECLARED, False),
]  # fmt: skip

SNIPPET = """
import json, sys
from tests.manifests.test_faults import run_real_cases
print(json.dumps(run_real_cases(sys.argv[1], json.loads(sys.argv[2]))))
"""


def _apply(home: Path, action: list[str]) -> None:
    if action[0] == "chmod":
        os.chmod(home / action[1], int(action[2], 8))
    else:  # ["file", rel]: replace a directory by a regular file
        shutil.rmtree(home / action[1])
        (home / action[1]).write_text("not a directory\n")


def _as_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "env": None if outcome.env is None else sorted(outcome.env),
        "error": None
        if outcome.error is None
        else [type(outcome.error).__name__, getattr(outcome.error, "path", None)],
        "complete": outcome.complete,
        "problems": list(outcome.problem_paths),
    }


def run_real_cases(top: str, cases: list[list[Any]]) -> list[dict[str, Any]]:
    """Run as uid 65534: per case, (healthy build,) apply the actions, build; JSON results."""
    results = []
    for case_id, actions, mode, warm in cases:
        launch = Path(os.path.realpath(Path(top) / case_id / "A"))
        home = Path(os.path.realpath(Path(top) / case_id / "B"))
        host = make_host(launch, mode)
        healthy = _as_json(attempt(host, home)) if warm else None
        for action in actions:
            _apply(home, action)
        results.append({"healthy": healthy, "outcome": _as_json(attempt(host, home))})
    return results


def _outcome_from_json(data: dict[str, Any]) -> Outcome:
    error: EnvscopeError | None = None
    if data["error"] is not None:
        kind, path = data["error"]
        error = ManifestError(path, "from uid 65534") if kind == "ManifestError" else None
        assert error is not None, data["error"]
    env = None if data["env"] is None else dict.fromkeys(data["env"], "")
    return Outcome(env, error, data["complete"], tuple(data["problems"]))


@pytest.mark.privdrop
def test_real_faults_as_nobody_fail_closed() -> None:
    """Real chmod 000 / a root turned into a file, as uid 65534: every build fails closed."""
    with nobody_tree() as top:
        for case_id, *_ in REAL:
            make_tree(top / case_id)
        give_to_nobody(top)
        cases = [[c[0], c[1], c[2], c[3]] for c in REAL]
        proc = run_as_nobody(SNIPPET, str(top), json.dumps(cases))
        assert proc.returncode == 0, proc.stderr
        results = json.loads(proc.stdout)
        assert len(results) == len(REAL)
        for (case_id, _, mode, warm, path, forbidden, fatal), got in zip(
            REAL, results, strict=True
        ):
            home = Path(os.path.realpath(top / case_id / "B"))
            if warm:
                assert got["healthy"]["complete"] is True, case_id
                assert (CHATX_DECLARED | RELAY_DECLARED).isdisjoint(got["healthy"]["env"])
            outcome = _outcome_from_json(got["outcome"])
            if mode == "raise" and fatal:
                assert outcome.error is not None, case_id
            else:
                assert outcome.error is None, case_id
            assert_fails_closed(outcome, home=home, path=path, forbidden=forbidden)
