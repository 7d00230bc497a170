"""Stateful property test (issue #6 item 1): a ``RuleBasedStateMachine`` driving a real ``Host``.

The machine edits the parent env, the homes' ``.env`` files, the platform
manifests (writes, deletes, faults through ``InstrumentedFileSystem``), the
adapter census and the host itself (multiplex on/off), and checks the
invariants of docs/security.md's promises after every build. The manifest
cache is modelled exactly (a stamp per home; every write gets a unique
mtime), so the machine knows each home's policy without asking envscope, and
compares it with ``host.policy``. Its hosts run with name context off: the
machine models the declared tiers and the manifests, and name context (an
undeclared credential by its name and value) is pinned apart, as "on is off
minus exactly the rule's matches and their copies"
(``tests/pipeline/test_name_context_decision.py``) and by the one-rule
differential, which draws the switch.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import pytest
from hypothesis import settings, stateful
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from envscope import Catalog, Host, StaticSource, Surface, Tier
from envscope.errors import ConfigurationError, EnvscopeError, ManifestError, RoutingError
from envscope.policy.surfaces import MCP_SAFE_NAMES_WINDOWS
from envscope.testing_fs import HOUR_NS, InstrumentedFileSystem
from tests.property.conftest import MACHINE_EXAMPLES

pytestmark = pytest.mark.property

# A partial scan's deny prefix beats an adapter's Tier 2 (fixed; pinned by
# test_deny_prefix_beats_adapter_tier2). True would model the old, fail-open order.
ADAPTERS_BEAT_DENY_PREFIXES = False

HOMES = ("A", "B", "C")
WHERE = (None, "A", "B", "C", "B~")  # None: nothing bound; "B~" is a symlink alias of B
PLUGINS = {"chatx": "CHATX_", "zorg": "ZORG_", "acme-bot": "ACME_BOT_"}  # dir → env prefix
ADAPTERS = ("chatx", "zorg", "acme")
SUFFIXES = ("_TOKEN", "_SECRET", "_KEY", "_PASSWORD", "_JSON")
MCP_SAFE = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR", "TZ"}
MCP_SAFE_WINDOWS = set(MCP_SAFE_NAMES_WINDOWS)
HOME_VAR, FORCE = "ENVSCOPE_HOME", "_ENVSCOPE_FORCE_"
DECLARABLE = (
    *("CHATX_SIGNING_SECRET", "CHATX_WEBHOOK_KEY", "CHATX_WORKSPACE", "CHATX_ALLOWED_USERS"),
    *("CHATX_BOT_TOKEN", "ZORG_API_KEY", "ZORG_BASE_URL", "ZORG_PASSWORD", "ZORG_MODEL"),
    *("ACME_BOT_TOKEN", "ACME_BOT_CONFIG_JSON", "ACME_BOT_REGION", "ACME_SIGNING_SECRET"),
    *("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN"),
    *("DISCORD_ALLOWED_CHANNELS", "AUXILIARY_VISION_API_KEY", "GATEWAY_RELAY_SECRET"),
    *("ORG_POLICY_FLAG", "ORG_PROXY", "MY_APP_KEY", "A_MARKER", "B_MARKER", "SOME_MODEL"),
    *("EDITOR", "HOST_DEPLOY_TOKEN", "HOST_SIGNING_KEY", "HOST_LLM_KEY", "DEMO_ALLOWED_SENDER"),
)
POOL = (*DECLARABLE, "PATH", "HOME", "LANG", "TZ", "XDG_CONFIG_HOME", HOME_VAR, FORCE + "X")
ODD_NAMES = ("straße", "STRASSE", "openaı_apı_key", "ſome_model", "X.Y", "A-B", "ǅ")
SHARED = ("sk-shared-0000000001", "xoxb-shared-token-22", "tiny", "() { :; }")
BASE_MTIME_NS = 1_500_000_000 * 10**9  # long before the seam's clock: never racy


def recase(name: str, mask: int) -> str:
    """``name`` with the letters picked by ``mask`` lower-cased (0: unchanged)."""
    return "".join(c.lower() if (mask >> (i % 24)) & 1 else c for i, c in enumerate(name))


def has_suffix(name: str) -> bool:
    """True for a secret-suffixed name (any case)."""
    return name.upper().endswith(SUFFIXES)


def upper_map(pairs: dict[str, str]) -> dict[str, str]:
    """Upper-cased key → value, later spellings winning."""
    return {k.upper(): v for k, v in pairs.items()}


def fold(pairs: dict[str, str]) -> dict[str, str]:
    """One spelling per name, as Windows keeps it: the upper-case one if present, else the first."""
    chosen: dict[str, tuple[str, str]] = {}
    for key, value in pairs.items():
        up = key.upper()
        if up not in chosen or (key == up and chosen[up][0] != up):
            chosen[up] = (key, value)
    return dict(chosen.values())


def layered(lower: dict[str, str], upper: dict[str, str], windows: bool) -> dict[str, str]:
    """``upper`` set over ``lower``: every spelling of each name ``upper`` sets is replaced."""
    if windows:
        lower, upper = fold(lower), fold(upper)
    names = {k.upper() for k in upper}
    return {**{k: v for k, v in lower.items() if k.upper() not in names}, **upper}


masks = st.one_of(st.just(0), st.just(-1), st.integers(0, 2**24))
declarable = st.builds(recase, st.sampled_from(DECLARABLE), masks)
names = st.one_of(
    st.builds(recase, st.sampled_from(POOL), masks),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True),
)
_char = st.characters(codec="utf-8", exclude_characters="\x00")
_text = st.text(_char, max_size=24)
values = st.one_of(
    st.sampled_from(("", *SHARED, "caf\udcc3-escaped")),  # a surrogateescape'd byte, as on POSIX
    _text,
    _text.map(lambda s: "() { " + s + "; }"),
    st.builds(lambda c, n: c * max(1, n // len(c.encode())), _char, st.integers(1000, 10_240)),
)
_dotenv_char = st.characters(codec="utf-8", exclude_characters="'\\$", exclude_categories=["Cc"])
dotenv_values = st.one_of(st.sampled_from(("", *SHARED)), st.text(_dotenv_char, max_size=16))
dotenv_entries = st.lists(st.tuples(names, dotenv_values), max_size=4).map(dict)
flags = st.sampled_from((None, True, False))
manifest_entries = st.lists(st.tuples(declarable, flags), max_size=4).map(tuple)
homes, plugins = st.sampled_from(HOMES), st.sampled_from(sorted(PLUGINS))
wheres, adapter_names = st.sampled_from(WHERE), st.sampled_from(ADAPTERS)


@dataclass
class PluginState:
    """One ``<home>/plugins/platforms/<plugin>/`` as the machine left it."""

    exists: bool = False
    present: bool = False  # plugin.yaml exists
    broken: bool = False  # it fails schema validation
    secrets: frozenset[str] = frozenset()  # the names it declares secret (upper-cased)
    version: int = 0  # bumped by every write of plugin.yaml
    dir_version: int = 0  # bumped by every change of the directory's own listing
    denied_file: bool = False
    denied_dir: bool = False

    @property
    def failing(self) -> bool:
        """The scan cannot know what this plugin declares."""
        return self.denied_dir or (self.present and (self.denied_file or self.broken))

    def stamp(self) -> tuple[object, ...]:
        """What the host's stat-only probe sees of this plugin."""
        if self.denied_dir:
            return ("denied", self.dir_version)  # the directory's own signature
        return ("file", self.version) if self.present else ("none",)


@dataclass(frozen=True)
class HomeCache:
    """The model of one home's manifest-cache entry."""

    stamp: tuple[object, ...] | None = None
    names: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()
    failed: tuple[str, ...] = ()


class HostMachine(RuleBasedStateMachine):
    """Random edits of a host's inputs, with the child-env invariants checked at every build."""

    MODE: ClassVar[Literal["raise", "deny"]] = "deny"
    WINDOWS: ClassVar[bool] = False  # Windows names fold: no case twins in a child

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="envscope-machine-")).resolve()
        for h in HOMES:
            (self.root / h).mkdir()
        (self.root / "B~").symlink_to(self.root / "B", target_is_directory=True)
        self.managed_path = self.root / "managed.env"
        self.environ: dict[str, str] = {"PATH": "/usr/bin", "HOME": "/home/op", "LANG": "C"}
        self.fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
        self.mtimes = itertools.count(1)
        self.plugins = {(h, p): PluginState() for h in HOMES for p in PLUGINS}
        self.dotenv: dict[str, dict[str, str]] = {h: {} for h in HOMES}
        self.adapters: dict[str, dict[str, tuple[str, ...]]] = {h: {} for h in HOMES}
        self.caches = {h: HomeCache() for h in HOMES}
        self.sources: dict[str, dict[str, str]] = {h: {} for h in HOMES}
        self.managed: dict[str, str] = {}
        self.recorded: set[str] = set()
        self.supplied: set[str] = set()
        self.catalog = Catalog.default()
        self.multiplex = False
        self.host: Host | None = None
        self.introduced: set[str] = set()  # upper: vectors the launch's source put in
        self.launch_loaded: dict[str, str] = {}  # what this host's load read: its launch values

    def teardown(self) -> None:
        """Remove the machine's home tree."""
        shutil.rmtree(self.root, ignore_errors=True)

    def path(self, where: str) -> Path:
        """The directory of a home (or of the alias)."""
        return self.root / where

    def touch(self, path: Path) -> None:
        """Give ``path`` a unique mtime, so the host's stat stamp always changes."""
        t = BASE_MTIME_NS + next(self.mtimes) * 1_000_000
        os.utime(path, ns=(t, t))

    def write_dotenv(self, path: Path, entries: dict[str, str]) -> None:
        """Write entries as single-quoted dotenv lines."""
        path.write_text("".join(f"{k}='{v}'\n" for k, v in entries.items()), encoding="utf-8")

    def write_manifest(self, h: str, p: str, text: str, in_place: bool) -> PluginState:
        """Write ``plugin.yaml`` in place or by rename, keeping the stamp model exact."""
        state = self.plugins[h, p]
        where = self.path(h) / "plugins" / "platforms" / p
        where.mkdir(parents=True, exist_ok=True)
        target = where / "plugin.yaml"
        if in_place and state.present:
            target.write_text(text, encoding="utf-8")  # same inode; the listing is unchanged
        else:
            (where / ".tmp").write_text(text, encoding="utf-8")
            os.replace(where / ".tmp", target)
            self.touch(where)
            state.dir_version += 1
        self.touch(target)
        state.exists, state.present, state.version = True, True, state.version + 1
        return state

    # -- setup -------------------------------------------------------------

    @initialize(
        tiers=st.tuples(st.lists(declarable, max_size=3), st.lists(declarable, max_size=3)),
        managed=st.lists(st.tuples(declarable, dotenv_values), max_size=3).map(dict),
        sources=st.fixed_dictionaries(dict.fromkeys(HOMES, dotenv_entries)),
        launch=dotenv_entries,
    )
    def setup(
        self,
        tiers: tuple[list[str], list[str]],
        managed: dict[str, str],
        sources: dict[str, dict[str, str]],
        launch: dict[str, str],
    ) -> None:
        """A host over home A with a host catalog extension, a managed file, a secret source."""
        self.catalog = Catalog.default().with_names(tier1=tiers[0], tier2=tiers[1])
        self.managed, self.sources, self.dotenv["A"] = managed, sources, launch
        self.write_dotenv(self.managed_path, managed)
        self.write_dotenv(self.path("A") / ".env", launch)
        self.new_host(multiplex=False, load=True)  # rebuild_host varies both

    def new_host(self, multiplex: bool, load: bool) -> None:
        """Build a fresh Host over the same environ, homes, fs, sources and adapters."""
        host = Host(
            self.path("A"),
            catalog=self.catalog,
            managed_env_file=self.managed_path,
            environ=self.environ,
            multiplex=multiplex,
            fs=self.fs,
            on_unreadable_platform=self.MODE,
            windows=self.WINDOWS,
            name_context=False,  # modelled apart: test_name_context_decision, the one-rule property
        )
        per_home = {str(self.path(h)): dict(v) for h, v in self.sources.items()}
        host.add_secret_source(StaticSource("vault", per_home))
        for h, adapters in self.adapters.items():
            for name, requires in adapters.items():
                host.register_adapter(name, requires, home=self.path(h))
        self.host, self.multiplex, self.loaded = host, multiplex, load
        self.recorded, self.supplied = set(), set()
        self.caches = {h: HomeCache() for h in HOMES}  # a new host has a cold manifest cache
        self.introduced = set()
        # the host's launch values: what its load read (the .env may be rewritten later; the
        # values it loaded stay in the process, and declared ones stay secrets)
        self.launch_loaded = {**self.dotenv["A"], **self.sources["A"]} if load else {}
        if load:
            expected = dict(self.environ)
            for key, value in self.dotenv["A"].items():
                expected.setdefault(key, value)
            for key, value in self.sources["A"].items():
                if key not in expected and host.refuses_injection(key.upper()):
                    self.introduced.add(key.upper())  # a vector the launch's source put in
                expected.setdefault(key, value)
            expected.update(self.managed)
            host.load_launch_env()
            assert self.environ == expected, "load_launch_env: wrong precedence"
            self.recorded, self.supplied = set(self.dotenv["A"]), set(self.sources["A"])
        assert host.launch_dotenv_keys() == frozenset(self.recorded)
        assert host.source_supplied_names() == frozenset(self.supplied)

    # -- rules: parent env, dotenv files, host, adapters ----------------------

    @precondition(lambda self: sum(len(k) + len(v) for k, v in self.environ.items()) < 300_000)
    @rule(name=names | st.sampled_from(ODD_NAMES), value=values)
    def add_parent_variable(self, name: str, value: str) -> None:
        """Set a variable in the host's environ (twins ignoring case included)."""
        self.environ[name] = value

    @rule(home=homes, entries=dotenv_entries)
    def write_home_dotenv(self, home: str, entries: dict[str, str]) -> None:
        """Rewrite a home's ``.env`` (A's: the launch file; the others: routed scopes)."""
        self.dotenv[home] = entries
        self.write_dotenv(self.path(home) / ".env", entries)

    @rule(multiplex=st.booleans(), load=st.booleans())
    def rebuild_host(self, multiplex: bool, load: bool) -> None:
        """Toggle multiplex: a new Host over the same environ and homes."""
        self.new_host(multiplex, load)

    @rule(name=adapter_names, requires=st.lists(declarable, max_size=3), where=wheres)
    def adapter(self, name: str, requires: list[str], where: str | None) -> None:
        """Register a runtime adapter for a home (an empty list unregisters it)."""
        assert self.host is not None
        census = self.adapters[(where or "A").rstrip("~")]
        if requires:  # secret-suffixed names become Tier 2 for that home
            self.host.register_adapter(name, requires, home=self.path(where or "A"))
            census[name] = tuple(requires)
        else:  # no error when absent
            self.host.unregister_adapter(name, home=self.path(where or "A"))
            census.pop(name, None)

    # -- rules: manifests -----------------------------------------------------

    @rule(h=homes, p=plugins, entries=manifest_entries, in_place=st.booleans(), bad=st.booleans())
    def write_platform_manifest(
        self,
        h: str,
        p: str,
        entries: tuple[tuple[str, bool | None], ...],
        in_place: bool,
        bad: bool,
    ) -> None:
        """Write, edit or replace a platform manifest (``bad``: one the schema rejects)."""
        lines = [f"name: {p}\nkind: platform\nrequires_env:" + ("" if entries else " []")]
        for name, secret in entries:
            flag = "" if secret is None else f", secret: {str(secret).lower()}"
            lines.append(f'  - {{name: "{name}"{flag}}}')
        text = f"name: {p}\nrequires_env: {p.upper()}_X\n" if bad else "\n".join(lines) + "\n"
        state = self.write_manifest(h, p, text, in_place)
        declared = (n for n, s in entries if (s if s is not None else has_suffix(n)))
        state.broken, state.secrets = bad, frozenset(() if bad else map(str.upper, declared))

    @rule(h=homes, p=plugins)
    def delete_platform_manifest(self, h: str, p: str) -> None:
        """Delete a manifest (its directory stays)."""
        state = self.plugins[h, p]
        if state.present:
            where = self.path(h) / "plugins" / "platforms" / p
            (where / "plugin.yaml").unlink()
            self.touch(where)
            state.present, state.dir_version = False, state.dir_version + 1

    @rule(h=homes, p=plugins, whole_dir=st.booleans())
    def deny(self, h: str, p: str, whole_dir: bool) -> None:
        """``chmod 000`` through the seam: the manifest (open fails) or the plugin directory."""
        state = self.plugins[h, p]
        where = self.path(h) / "plugins" / "platforms" / p
        if whole_dir and state.exists:
            self.fs.deny_dir(where)
            state.denied_dir = True
        elif not whole_dir:
            self.fs.deny_file(where / "plugin.yaml")
            state.denied_file = True

    @rule()
    def heal(self) -> None:
        """Restore every mode (the seam's faults are removed)."""
        self.fs.heal()
        for state in self.plugins.values():
            state.denied_file = state.denied_dir = False

    # -- the model of the manifest cache and the policy -------------------------

    def scan(self, h: str) -> tuple[str, ...]:
        """What ``host.policy(h)`` does to the cache; returns the failing plugins it holds."""
        states = [(p, self.plugins[h, p]) for p in sorted(PLUGINS) if self.plugins[h, p].exists]
        stamp = tuple((p, s.stamp()) for p, s in states)
        cached = self.caches[h]
        if cached.stamp == stamp:
            return cached.failed
        failed = tuple(p for p, s in states if s.failing)
        found = frozenset().union(*(s.secrets for _, s in states if s.present and not s.failing))
        deny = frozenset(PLUGINS[p] for p in failed)
        if failed:  # a partial scan keeps everything the home already had
            found, deny = found | cached.names, deny | cached.deny
        self.caches[h] = HomeCache(stamp, found, deny, failed)
        return failed

    def tier(self, h: str, name: str) -> Tier | None:
        """The model's tier: catalog, manifests, adapters, partial-scan deny prefixes."""
        up = name.upper()
        decl = self.catalog.lookup(up)
        if decl is not None:
            return decl.tier
        if up in self.caches[h].names:
            return Tier.TIER1
        denied = has_suffix(up) and up.startswith(tuple(self.caches[h].deny))
        if denied and not ADAPTERS_BEAT_DENY_PREFIXES:
            return Tier.TIER1
        if has_suffix(up) and any(up in map(str.upper, r) for r in self.adapters[h].values()):
            return Tier.TIER2
        return Tier.TIER1 if denied else None

    def residue(self) -> frozenset[str]:
        """Launch residue: recorded dotenv keys, the current launch .env keys, supplied names."""
        return frozenset(n.upper() for n in self.recorded | set(self.dotenv["A"]) | self.supplied)

    # -- the build ---------------------------------------------------------------

    @rule(surface=st.sampled_from(Surface), where=wheres, inherit=st.booleans(), base=st.booleans())
    def build(self, surface: Surface, where: str | None, inherit: bool, base: bool) -> None:
        """Build one child env (routed or not, from environ or an explicit base)."""
        self.build_and_check(surface, where, inherit, base)

    @rule(where=wheres)
    def build_each_surface(self, where: str | None) -> None:
        """Switch the routed home and build a child of every surface there."""
        for surface in Surface:
            self.build_and_check(surface, where, inherit=False, explicit_base=False)

    def build_and_check(
        self, surface: Surface, where: str | None, inherit: bool, explicit_base: bool
    ) -> None:
        """Build a child env and check every invariant (inputs unchanged, errors as modelled)."""
        host = self.host
        assert host is not None
        target = "A" if where is None else where.rstrip("~")
        routed = self.multiplex or target != "A"
        environ_before = dict(self.environ)
        base = dict(self.environ) if explicit_base else None
        refused = self.multiplex and where is None and surface.needs_routed_home
        failing: list[Path] = []
        order = ["A", target] if where is not None else [target, "A"]  # routed() checks A first
        # an unbound build of a host whose managed file was never loaded is refused before
        # it asks any policy (``routed()`` asks them first when bound): nothing is scanned
        unscanned = refused or (not self.loaded and where is None)
        for h in [] if unscanned else order if routed else [target]:
            failed = self.scan(h)
            if failed and self.MODE == "raise":
                failing = [self.path(h) / "plugins" / "platforms" / p for p in failed]
                break
        child, error = None, None
        try:
            with contextlib.nullcontext() if where is None else host.routed(self.path(where)):
                child = host.build_subprocess_env(
                    base, surface=surface, inherit_credentials=inherit
                )
        except (RoutingError, ManifestError, ConfigurationError) as exc:
            error = exc
        assert refused is isinstance(error, RoutingError), f"{surface.value}: {error}"
        if not self.loaded and not refused:  # the managed file was never loaded: refused
            if isinstance(error, ManifestError):  # routed() scanned and failed first
                assert failing, error
            else:
                assert type(error) is ConfigurationError, error
                assert "never loaded" in str(error)
            assert self.environ == environ_before, "the build changed the host's environ"
            return
        assert bool(failing) is isinstance(error, ManifestError), error
        if isinstance(error, ManifestError):  # it names the failing file
            assert any(error.path.startswith(str(d)) for d in failing), error.path
        assert self.environ == environ_before, "the build changed the host's environ"
        assert base in (None, environ_before), "the build changed the base mapping"
        if child is not None:
            assert host.launch_residue() == self.residue()
            self.check(child, surface, where, inherit)

    def check(
        self, child: dict[str, str], surface: Surface, where: str | None, inherit: bool
    ) -> None:
        """The invariants of one finished build."""
        assert self.host is not None
        for key, value in child.items():  # a valid env: usable names, no NUL
            assert isinstance(key, str)
            assert isinstance(value, str)
            assert key
            assert "=" not in key
            assert "\x00" not in key + value
        windows = self.WINDOWS
        if windows:
            assert len({k.upper() for k in child}) == len(child), "two keys equal ignoring case"

        target = "A" if where is None else where.rstrip("~")
        routed = self.multiplex or target != "A"
        bound = where is not None and routed
        scope = {**self.dotenv[target], **self.sources[target]} if bound else {}
        # What stages 2 and 3 set, per spelling (POSIX keeps a layer's twins; Windows one).
        overlay_keys = layered(scope, self.managed, windows) if routed else {}
        overlay = upper_map(overlay_keys)
        source = self.environ  # unchanged by the build (checked by the caller)
        relevant = {k.upper() for k in (*source, *overlay, *child, *POOL)}
        for h in {target, "A"} if routed else {target}:  # host.policy agrees with the model
            policy, cache = self.host.policy(self.path(h)), self.caches[h]
            assert policy.complete is (not cache.failed)
            assert set(policy.deny_prefixes) == set(cache.deny)
            for name in relevant:
                assert policy.tier_of(name) is self.tier(h, name), (h, name)
        pol_t = self.host.policy(self.path(target))
        pol_l = self.host.policy(self.path("A")) if routed else pol_t
        keep = self.host.global_names | self.catalog.network_trust
        keep |= {k.upper() for k in self.managed}
        inherits = inherit or surface is Surface.CREDENTIALED
        residue = self.residue()
        supplied = {n.upper() for n in (*self.supplied, *(self.sources[target] if bound else ()))}
        mcp = surface is Surface.MCP
        # A routed child (any surface) and a worker are told their own home.
        pinned = HOME_VAR if routed or surface is Surface.WORKER else None

        def declared(up: str) -> bool:
            return self.tier(target, up) is not None or (routed and self.tier("A", up) is not None)

        def gate(up: str) -> bool:
            return pol_t.is_gate(up) or pol_l.is_gate(up)

        def stripped(up: str) -> bool:
            found = self.tier(target, up)
            return found is Tier.TIER1 or (found is Tier.TIER2 and not inherits)

        # The alias rule may strip a kept variable whose value (8+ characters) equals the
        # value of a declared name, unless the child holds that value under a declared name.
        launch_loads = (
            *self.launch_loaded.items(),
            *self.dotenv["A"].items(),
            *self.sources["A"].items(),
        )
        inputs = (*source.items(), *scope.items(), *self.managed.items(), *launch_loads)
        held = {v for k, v in child.items() if declared(k.upper())}
        secret_values = {v for k, v in inputs if declared(k.upper()) and v not in held}
        managed_up = upper_map(self.managed)
        managed_pairs = {(k.upper(), v) for k, v in self.managed.items()}
        managed_exact = set(self.managed.items())
        # the routed profile's own values: its scope, but not a key the managed file sets
        own = {k: v for k, v in upper_map(scope).items() if k not in managed_up}
        # Routed, the launch process's value of a declared name (not the managed file's own
        # value) is a launch credential: stripped under every key but the one whose own value
        # it is, even when the child holds an equal value as its own (else the alias would
        # tell a profile that its guess equals a launch secret: no oracle).
        launch_credentials = {
            v
            for k, v in (*source.items(), *launch_loads)
            if routed and declared(k.upper()) and managed_up.get(k.upper()) != v
        }

        def may_lose(up: str, value: str) -> bool:
            if up.startswith(FORCE) or stripped(up) or up == pinned:
                return True
            # an injection vector the launch's source put in reaches no child (but for the
            # managed file's own entry of that name, which replaced the source's value)
            if up in self.introduced and (up, value) not in managed_pairs:
                return True
            if routed and self.tier("A", up) is not None and own.get(up) != value:
                return True  # a launch-declared name: only the routed profile's own value passes
            # a secret value of 8+ characters goes whole or inside a longer value
            if any(len(v) >= 8 and v in value for v in secret_values):
                return True
            if own.get(up) != value and any(len(v) >= 8 and v in value for v in launch_credentials):
                return True
            return mcp and (not mcp_safe(up) or value.startswith("()"))

        def mcp_safe(up: str) -> bool:
            if up in supplied:
                return True
            if windows:
                return up in MCP_SAFE_WINDOWS
            return up in MCP_SAFE or up.startswith("XDG_")

        for key, value in child.items():
            up = key.upper()
            assert not up.startswith(FORCE), up
            # Tier 1 includes a partial scan's deny prefixes (fail closed).
            assert self.tier(target, up) is not Tier.TIER1, f"Tier 1 {up} reached a child"
            assert inherits or self.tier(target, up) is None, f"Tier 2 {up} reached a child"
            if routed and up not in overlay and up not in keep:
                assert up not in residue, f"launch residue {up} reached a routed child"
                assert not declared(up), f"launch-env credential {up} reached a routed child"
                assert not gate(up), f"authorization gate {up} reached a routed child"
            if routed and up in overlay and up != pinned:  # every other spelling was replaced
                assert overlay_keys.get(key) == value, f"{key}: the scope or managed value lost"
            if mcp:
                assert mcp_safe(up) or up == pinned, up
                assert not value.startswith("()"), f"a shell function reached MCP as {up}"
            if up in managed_up and up != pinned:  # the administrator's value, every spelling
                ours = (up, value) in managed_pairs if windows else (key, value) in managed_exact
                assert ours, f"{key}: a value beside the managed one reached a child"
        if pinned and not stripped(pinned):
            home = str(self.path(target))
            assert child.get(HOME_VAR) == home or home in secret_values

        # Nothing else is lost: every undeclared, non-residue base variable (every spelling
        # on POSIX, one per name on Windows) and every scope / managed value arrives, unchanged.
        winners = fold(source) if windows else source
        # Windows: one spelling per name, any spelling (stage 3 spells a managed name as the
        # managed file does, even unrouted): the child is read by name
        by_name = upper_map(child) if windows else child
        for key, value in winners.items():
            up = key.upper()
            if up in overlay or may_lose(up, value):
                continue
            ours = (up, value) in managed_pairs if windows else (key, value) in managed_exact
            if up in managed_up and up != pinned and not ours:
                continue  # a twin or another value of a managed name: refused
            if routed and up not in keep and (up in residue or declared(up) or gate(up)):
                continue
            got = by_name.get(up if windows else key)
            assert got == value, f"undeclared {key} was lost or changed"
        # A scope may not introduce an injection vector (CC, LD_PRELOAD…): refused at overlay.
        refused = {
            k.upper()
            for k in scope
            if k.upper() not in managed_up and self.host.refuses_injection(k.upper())
        }
        for key, value in overlay_keys.items():
            if key.upper() in refused:  # the scope's value never arrives (the parent's may)
                assert child.get(key) != value or source.get(key) == value, f"{key} introduced"
                continue
            assert may_lose(key.upper(), value) or child.get(key) == value, f"{key} lost"


class RaisingHostMachine(HostMachine):
    """The same machine with ``on_unreadable_platform="raise"``: a ManifestError names the file."""

    MODE: ClassVar[Literal["raise", "deny"]] = "raise"


class WindowsHostMachine(HostMachine):
    """The same machine with Windows semantics (``Host(windows=True)``): names fold."""

    WINDOWS: ClassVar[bool] = True


STEPS = settings(stateful_step_count=30, max_examples=MACHINE_EXAMPLES)


def test_host_machine_fail_closed() -> None:
    """Random host histories (deny mode) never break a child-env invariant."""
    stateful.run_state_machine_as_test(HostMachine, settings=STEPS)


def test_host_machine_windows_semantics() -> None:
    """Random host histories with Windows semantics: one spelling per name, same invariants."""
    stateful.run_state_machine_as_test(WindowsHostMachine, settings=STEPS)


def test_host_machine_raises_naming_the_file() -> None:
    """Random host histories (raise mode): unreadable platform manifests raise naming the file."""
    stateful.run_state_machine_as_test(RaisingHostMachine, settings=STEPS)


# -- regressions found by the machine (the lead fixes the package) -----------------


def test_deny_prefix_beats_adapter_tier2(tmp_path: Path) -> None:
    """An unreadable manifest's prefix denies its secret names to credentialed children too."""
    (tmp_path / "A").mkdir()
    manifest = tmp_path / "B" / "plugins" / "platforms" / "chatx" / "plugin.yaml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("name: chatx\nrequires_env: [CHATX_WEBHOOK_KEY]\n")
    for denied in (False, True):  # readable, the manifest makes the name Tier 1
        fs = InstrumentedFileSystem(clock_offset_ns=HOUR_NS)
        if denied:
            fs.deny_file(manifest)
        host = Host(tmp_path / "A", environ={}, fs=fs, on_unreadable_platform="deny")
        host.register_adapter("chatx", ["CHATX_WEBHOOK_KEY"], home=tmp_path / "B")
        with host.routed(tmp_path / "B", scope={"CHATX_WEBHOOK_KEY": "from-b"}):
            env = host.build_subprocess_env({}, surface=Surface.CREDENTIALED)
        assert "CHATX_WEBHOOK_KEY" not in env, f"denied={denied}"


def test_lone_surrogate_value_stays_in_the_error_tree(tmp_path: Path) -> None:
    """A value no codec can encode (Windows env blocks allow one) never escapes EnvscopeError."""
    host = Host(tmp_path, environ={"PATH": "/bin", "ODD": "\ud800"})
    with contextlib.suppress(EnvscopeError):
        assert host.build_subprocess_env()["PATH"] == "/bin"
