"""The warm-path budget (issue #5): system calls counted through the file-system seam, and
no pydantic or YAML on a warm build. Counts, never seconds: ``make bench`` does the timing.
Last, the records made cheaper for the warm path keep the value semantics they had.
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envscope import Catalog, Host, Origin, OriginKind, Problem, SecretPolicy, Surface, Tier, Trace
from envscope.files._fs import DirEntry
from envscope.policy._declarations import Declaration, HomeDeclarations
from envscope.policy._secret_policy import Adapter, build_policy
from envscope.policy.catalog import CatalogPattern
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests.conftest import write_home

ROOT = Path(__file__).resolve().parent.parent

MANIFEST = "name: {name}\nkind: {kind}\nrequires_env:\n  - {prefix}_BOT_TOKEN\n"
BASE = {
    "PATH": "/usr/bin",
    "HOME": "/home/op",
    "OPENAI_API_KEY": "sk",
    "LAUNCHCHAT_BOT_TOKEN": "t",
    "WORKCHAT_BOT_TOKEN": "w",
    "EDITOR": "vi",
}


def plugin(root: Path, name: str, kind: str = "platform") -> None:
    """Write ``<root>/<name>/plugin.yaml``."""
    (root / name).mkdir(parents=True)
    text = MANIFEST.format(name=name, kind=kind, prefix=name.upper())
    (root / name / "plugin.yaml").write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """Bundled: 2 plugins. Launch: 2 platform + 1 flat. Work: 3 platform + 2 flat."""
    bundled = tmp_path / "bundled"
    for name in ("bundledone", "bundledtwo"):
        plugin(bundled, name)
    launch = write_home(tmp_path, "launch", {"LAUNCH_MARKER": "a"})
    plugin(launch / "plugins" / "platforms", "launchchat")
    plugin(launch / "plugins" / "platforms", "launchmail")
    plugin(launch / "plugins", "launchnotes", kind="memory")
    work = write_home(tmp_path, "work", {"WORK_MARKER": "b"})
    for name in ("workchat", "workmail", "workpager"):
        plugin(work / "plugins" / "platforms", name)
    plugin(work / "plugins", "worknotes", kind="memory")
    plugin(work / "plugins", "workbridge", kind="platform")
    return {"bundled": bundled, "launch": launch, "work": work}


ROOTS = 3  # bundled, <home>/plugins/platforms, <home>/plugins
LAUNCH_CANDIDATES = 2 + 3  # bundled + the launch home's plugin directories
WORK_CANDIDATES = 2 + 5  # bundled + the work home's plugin directories


def make_host(tree: dict[str, Path], fs: InstrumentedFileSystem) -> Host:
    """A host over the tree, reading through ``fs`` (clock an hour ahead: nothing racy)."""
    return Host(
        tree["launch"],
        catalog=Catalog.default(),
        bundled_plugins=tree["bundled"],
        environ=dict(BASE),
        fs=fs,
    )


def counts(fs: InstrumentedFileSystem) -> dict[str, int]:
    """The seam's call counts, every op present."""
    return {op: fs.calls[op] for op in ("scandir", "stat", "open")}


SURFACES = [Surface.TERMINAL, Surface.SCRIPT, Surface.CREDENTIALED, Surface.MCP]


@pytest.mark.parametrize("traced", [False, True], ids=["plain", "trace"])
@pytest.mark.parametrize("surface", SURFACES, ids=[s.value for s in SURFACES])
def test_warm_launch_build_is_one_stamp(
    tree: dict[str, Path], surface: Surface, traced: bool
) -> None:
    """A warm build for the launch home lists each root once and stats each manifest once."""
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = make_host(tree, fs)
    host.build_subprocess_env(surface=surface)
    for builds in (1, 3):
        fs.reset_counts()
        for _ in range(builds):
            host.build_subprocess_env(surface=surface, trace=Trace() if traced else None)
        want = {"scandir": ROOTS * builds, "stat": LAUNCH_CANDIDATES * builds, "open": 0}
        assert counts(fs) == want
        assert fs.opened == []


@pytest.mark.parametrize("traced", [False, True], ids=["plain", "trace"])
def test_warm_routed_build_is_one_stamp(tree: dict[str, Path], traced: bool) -> None:
    """A warm routed build costs the bound home's stamp: roots + candidates, nothing opened."""
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = make_host(tree, fs)
    with host.routed(tree["work"]):
        host.build_subprocess_env(BASE)
        fs.reset_counts()
        env = host.build_subprocess_env(BASE, trace=Trace() if traced else None)
    assert "WORKCHAT_BOT_TOKEN" not in env
    assert counts(fs) == {"scandir": ROOTS, "stat": WORK_CANDIDATES, "open": 0}


def test_routed_build_checks_the_launch_home_once_per_binding(tree: dict[str, Path]) -> None:
    """Stage 1 strips what the launch policy declares; the launch home is checked when the
    binding is made, so every build in it costs only the bound home's stamp."""
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = make_host(tree, fs)
    host.build_subprocess_env(BASE)  # the launch home, cached
    fs.reset_counts()
    with host.routed(tree["work"]):
        entered = counts(fs)
        fs.reset_counts()
        envs = [host.build_subprocess_env(BASE) for _ in range(3)]
    assert entered == {"scandir": ROOTS, "stat": LAUNCH_CANDIDATES, "open": 0}
    for env in envs:
        assert "LAUNCHCHAT_BOT_TOKEN" not in env  # stage 1: the launch policy declares it
        assert "WORKCHAT_BOT_TOKEN" not in env
    # Three builds, three stamps of the work home; the first also reads its five manifests
    # (the bundled ones were parsed for the launch home already).
    assert counts(fs) == {"scandir": 3 * ROOTS, "stat": 3 * WORK_CANDIDATES, "open": 5}


def test_changed_manifest_costs_one_probe_then_a_read(tree: dict[str, Path]) -> None:
    """A changed manifest is found by the same probe (no second listing); the home's manifests
    are read again, the unchanged bundled ones are not."""
    fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
    host = make_host(tree, fs)
    host.build_subprocess_env()
    manifest = tree["launch"] / "plugins" / "platforms" / "launchmail" / "plugin.yaml"
    manifest.write_text(manifest.read_text() + "  - LAUNCHMAIL_EXTRA_SECRET\n")
    fs.reset_counts()
    env = host.build_subprocess_env({**BASE, "LAUNCHMAIL_EXTRA_SECRET": "x"})
    assert "LAUNCHMAIL_EXTRA_SECRET" not in env
    got = counts(fs)
    assert got["scandir"] == ROOTS
    assert got["stat"] == LAUNCH_CANDIDATES
    # A changed stamp re-reads the home's own manifests; the bundled ones (unchanged) were
    # parsed once for every home.
    assert got["open"] == LAUNCH_CANDIDATES - 2


WARM_PATH_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from envscope import Catalog, Host, Surface, Trace
    from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem

    launch, work, bundled = (Path(p) for p in sys.argv[1:4])
    environ = json.loads(sys.argv[4])
    host = Host(launch, catalog=Catalog.default(), bundled_plugins=bundled,
                environ=environ, fs=InstrumentedFileSystem(clock_offset_ns=HOUR_NS))
    host.load_launch_env()

    def unrouted():
        host.build_subprocess_env()
        host.build_subprocess_env(trace=Trace())

    def routed():
        for surface in Surface:
            host.build_subprocess_env(surface=surface)
            host.build_subprocess_env(surface=surface, trace=Trace())

    calls = {}

    def profiler(frame, event, arg):
        if event == "call":
            where = frame.f_code.co_filename
        elif event == "c_call":
            where = getattr(arg, "__module__", None) or ""
        else:
            return
        for lib in ("pydantic", "yaml", "dotenv"):
            if lib in where:
                calls[lib] = calls.get(lib, 0) + 1

    def counted(fn):
        sys.setprofile(profiler)
        try:
            fn()
        finally:
            sys.setprofile(None)

    unrouted()  # the cold path: pydantic and yaml parse the manifests here
    with host.routed(work):  # entering a binding reads the home's .env (dotenv): not counted
        routed()
        before = set(sys.modules)
        counted(routed)
    counted(unrouted)
    print(json.dumps({"new_modules": sorted(set(sys.modules) - before), "calls": calls}))
    """
)


def test_warm_path_imports_and_calls_no_pydantic(tree: dict[str, Path]) -> None:
    """After warm-up, warm builds (every surface, trace on and off) import nothing new and
    call no pydantic, yaml or dotenv code (the routed binding is made outside the count)."""
    args = [str(tree["launch"]), str(tree["work"]), str(tree["bundled"]), json.dumps(BASE)]
    out = subprocess.run(
        [sys.executable, "-c", WARM_PATH_SCRIPT, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result = json.loads(out.stdout)
    assert result == {"new_modules": [], "calls": {}}


def test_import_envscope_loads_no_heavy_module() -> None:
    """``import envscope`` loads no pydantic, yaml or dotenv."""
    code = (
        "import sys, envscope; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'pydantic_core', 'yaml', 'dotenv')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_importing_host_leaves_the_format_table_module_for_the_first_build() -> None:
    """``from envscope import Host`` does not load ``policy.formats`` (its dataclasses and
    table code cost milliseconds): a host's first build does."""
    code = "import sys; from envscope import Host; print('envscope.policy.formats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the faster records keep the frozen-dataclass behaviour they replaced -------------------


def _records() -> list[object]:
    """One of each record the warm path builds or reads."""
    origin = Origin(OriginKind.MANIFEST, "chatx", path="/p/plugin.yaml", line=3)
    return [
        origin,
        Problem("/p/plugin.yaml", "bad", line=2, field="requires_env", plugin="chatx"),
        Declaration("CHATX_TOKEN", Tier.TIER1, origin),
        CatalogPattern("AUX_*_KEY", Tier.TIER2, origin),
        Adapter("chatz", ("CHATZ_TOKEN",)),
        DirEntry("chatx", "/p/chatx", True, False),
    ]


@pytest.mark.parametrize("record", _records(), ids=lambda r: type(r).__name__)
def test_records_are_values(record: object) -> None:
    """Equal by value, hashable, a readable repr, a round trip through pickle and copy."""
    twin = copy.deepcopy(record)
    assert twin == record
    assert twin is not record
    assert hash(twin) == hash(record)
    assert pickle.loads(pickle.dumps(record)) == record
    assert repr(record).startswith(f"{type(record).__name__}(")
    assert record != object()


@pytest.mark.parametrize(
    "record", [r for r in _records() if not isinstance(r, DirEntry)], ids=lambda r: type(r).__name__
)
def test_records_are_frozen(record: object) -> None:
    """No field can be assigned or deleted after construction."""
    name = "name" if hasattr(record, "name") else "path" if hasattr(record, "path") else "pattern"
    with pytest.raises(AttributeError, match="cannot assign"):
        setattr(record, name, "x")
    with pytest.raises(AttributeError, match="cannot delete"):
        delattr(record, name)


def test_home_declarations_replace_and_equality() -> None:
    """``replace`` changes only the named fields; declarations are unhashable (they hold maps)."""
    decls = HomeDeclarations(plugin_prefixes=frozenset({"CHATX_"}), generation=1)
    later = decls.replace(generation=2)
    assert later.generation == 2
    assert later.plugin_prefixes == decls.plugin_prefixes
    assert later != decls
    assert later.replace(generation=1) == decls
    with pytest.raises(TypeError):
        hash(decls)


def test_catalog_is_a_value_with_a_shared_memo() -> None:
    """Catalogs compare by value (not by memo); ``lookup`` agrees with ``declaration``."""
    origin = Origin(OriginKind.CATALOG, "test")
    one = Catalog(patterns=(CatalogPattern("AUX_*_KEY", Tier.TIER2, origin),), source="t")
    two = Catalog(patterns=(CatalogPattern("AUX_*_KEY", Tier.TIER2, origin),), source="t")
    for name in ("AUX_X_KEY", "aux_y_key", "OTHER"):
        assert one.declaration(name) == one.lookup(name.upper()) == one.lookup(name.upper())
    assert one == two  # one has a filled memo, two an empty one
    assert "AUX_X_KEY" in one._memo.names
    assert "memo" not in repr(one)
    with pytest.raises(TypeError):
        hash(one)
    with pytest.raises(AttributeError):
        one.source = "x"  # type: ignore[misc]


def test_policy_built_directly_puts_its_own_names_ahead_of_the_catalogs() -> None:
    """``SecretPolicy(own, catalog=...)``: its own declarations first, then the catalog's."""
    origin = Origin(OriginKind.ADAPTER, "host")
    catalog = Catalog.default()
    own = {
        "OPENAI_API_KEY": Declaration("OPENAI_API_KEY", Tier.TIER1, origin),
        "MY_URL": Declaration("MY_URL", Tier.TIER2, origin),
    }
    policy = SecretPolicy(own, catalog=catalog)
    assert "OPENAI_API_KEY" in policy.tier1
    assert "OPENAI_API_KEY" not in policy.tier2
    assert "MY_URL" in policy.tier2
    assert policy.tier_of("openai_api_key") is Tier.TIER1  # the policy's own word first
    assert policy.tier_of("ANTHROPIC_API_KEY") is Tier.TIER2  # then the catalog's
    assert policy.reasons["OPENAI_API_KEY"] == policy.reasons["MY_URL"] == origin
    assert SecretPolicy(own).tier1 == {"OPENAI_API_KEY"}
    assert dict(SecretPolicy(own).reasons) == {"OPENAI_API_KEY": origin, "MY_URL": origin}
    assert SecretPolicy().tier_of("OPENAI_API_KEY") is None


def test_built_policy_explicit_view(tree: dict[str, Path]) -> None:
    """A built policy's tier sets and reasons are the catalog's plus the home's, lazily built."""
    catalog = Catalog.default()
    host = make_host(tree, InstrumentedFileSystem(clock_offset_ns=HOUR_NS))
    host.register_adapter("chatz", ["CHATZ_TOKEN", "CHATZ_URL"])
    policy = host.policy()
    assert policy == policy
    assert policy == host.policy()
    assert policy != build_policy(catalog)
    assert policy != object()
    with pytest.raises(TypeError):
        hash(policy)
    with pytest.raises(AttributeError, match="cannot assign"):
        policy.complete = False  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete"):
        del policy.complete
    declared = {"LAUNCHCHAT_BOT_TOKEN", "BUNDLEDONE_BOT_TOKEN"}
    assert declared <= policy.tier1
    assert "CHATZ_TOKEN" in policy.tier2
    assert set(catalog.names) <= policy.tier1 | policy.tier2
    reasons = policy.reasons
    assert set(reasons) == policy.tier1 | policy.tier2
    assert len(reasons) == len(policy.tier1 | policy.tier2)
    assert reasons["CHATZ_TOKEN"].kind is OriginKind.ADAPTER
    assert reasons["OPENAI_API_KEY"].kind is OriginKind.CATALOG
    assert "LAUNCHNOTES_BOT_TOKEN" not in reasons  # a flat plugin of another kind
    assert "CHATZ_TOKEN" in repr(reasons)
    assert "SecretPolicy(" in repr(policy)
    assert Adapter("chatz", ()).prefix == "CHATZ_"
