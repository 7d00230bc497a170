"""``Host``: the one object that owns process-level state.

It pins the launch home, loads the launch env, records what the launch
profile put into the process, binds routed homes (context-local), owns the
manifest cache and the adapter census, and runs the pure stages. Nothing
else in envscope touches ``os.environ`` or the file system.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Mapping
from types import MappingProxyType

from envscope._inputs import (
    DEFAULT_MAX_ENV_BYTES,
    WINDOWS,
    coerce_extra,
    home_identity,
    name_list,
    snapshot_env,
    valid_name,
)
from envscope.audit.trace import Trace, keep_value
from envscope.errors import ConfigurationError, RoutingError
from envscope.files._dotenv import read_dotenv
from envscope.pipeline import stages
from envscope.pipeline._aliases import SecretValues
from envscope.pipeline._binding import Binding, BuildMemo
from envscope.pipeline._guard_rule import GuardRule
from envscope.pipeline._residue_rule import ResidueRule
from envscope.pipeline._sanitize import SanitizeOptions, sanitize
from envscope.policy._declarations import Declaration, HomeDeclarations, Origin, OriginKind, norm
from envscope.policy._secret_policy import AdapterCensus, SecretPolicy, build_policy
from envscope.policy.catalog import Catalog
from envscope.policy.surfaces import BaseFilter, Surface, SurfacePolicy, mcp_allowlist

TYPE_CHECKING = False  # typing itself is not imported at ``import envscope``
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, MutableMapping, Sequence
    from typing import Literal

    from envscope.files._fs import FileSystem
    from envscope.manifests._cache import ManifestCache
    from envscope.policy.sources import SecretSource

__all__ = ["Binding", "Host", "home_identity"]


def _surface(surface: Surface | str) -> Surface:
    """A surface by enum or by name (any case); anything else is a ``ConfigurationError``."""
    found = None
    if isinstance(surface, Surface):
        return surface
    if isinstance(surface, str):
        found = Surface.__members__.get(surface.upper())
    if found is None:
        names = ", ".join(s.value for s in Surface)
        shown = repr(surface) if isinstance(surface, str) else f"a {type(surface).__name__}"
        raise ConfigurationError(f"surface: {shown} is not one of {names}")
    return found


def _fetch(source: SecretSource, home: str) -> dict[str, str]:
    """What a secret source supplies for a home, checked: string names and string values."""
    fetched = source.fetch(home)
    if not isinstance(fetched, Mapping):
        raise ConfigurationError(
            f"secret source {source.name!r} returned a {type(fetched).__name__}, not a mapping"
        )
    out: dict[str, str] = {}
    for key, value in fetched.items():
        if not isinstance(key, str) or not valid_name(key):
            raise ConfigurationError(
                f"secret source {source.name!r} supplied an invalid name {key!r}"
            )
        if not isinstance(value, str) or "\x00" in value:
            raise ConfigurationError(
                f"secret source {source.name!r} supplied {key!r} with a value that is not "
                "a string without NUL"
            )
        out[key] = value
    return out


def _same_file(path: str, other: str) -> bool:
    """True when two paths name one file (device and inode), following symlinks."""
    try:
        return os.path.samestat(os.stat(path), os.stat(other))
    except (OSError, ValueError):
        return False


def _own_values(binding: Binding | None) -> dict[str, frozenset[str]]:
    """The routed profile's own values: upper-cased name → the values of its spellings.

    Its scope minus the managed keys; every spelling counts (POSIX keeps case twins).
    """
    if binding is None:
        return {}
    origins = binding.scope_origins
    managed = OriginKind.MANAGED
    own: dict[str, frozenset[str]] = {}
    for key, value in binding.scope.items():
        origin = origins.get(up := norm(key))
        if origin is None or origin.kind is not managed:
            own[up] = own.get(up, frozenset()) | {value}
    return own


class Host:
    """Builds child environments for one agent host process (see DESIGN.md §5)."""

    def __init__(
        self,
        launch_home: str | os.PathLike[str],
        *,
        catalog: Catalog | None = None,
        managed_env_file: str | os.PathLike[str] | None = None,
        bundled_plugins: str | os.PathLike[str] | None = None,
        environ: MutableMapping[str, str] | None = None,
        multiplex: bool = False,
        home_env_var: str = "ENVSCOPE_HOME",
        global_names: Iterable[str] | None = None,
        fs: FileSystem | None = None,
        on_unreadable_platform: Literal["raise", "deny"] = "raise",
        windows: bool | None = None,
        surface_policies: Mapping[Surface | str, SurfacePolicy] | None = None,
        strip_value_aliases: bool = True,
        max_env_bytes: int = DEFAULT_MAX_ENV_BYTES,
        allow_injection: Iterable[str] = (),
        known_safe: Iterable[str] = (),
        mcp_network_trust: bool = True,
    ) -> None:
        self.launch_home = home_identity(launch_home)
        self.multiplex = multiplex
        if not isinstance(home_env_var, str) or not valid_name(home_env_var):
            raise ConfigurationError("home_env_var: not a valid environment name")
        if home_env_var.upper().startswith(stages.FORCE_PREFIX):
            raise ConfigurationError("home_env_var: may not start with the force prefix")
        self.home_env_var = home_env_var
        self._catalog = catalog
        self._managed_path = None if managed_env_file is None else os.fspath(managed_env_file)
        self._bundled = None if bundled_plugins is None else os.fspath(bundled_plugins)
        self._environ: MutableMapping[str, str] = os.environ if environ is None else environ
        self._global_names = (
            None
            if global_names is None
            else frozenset(map(norm, name_list(global_names, "global_names")))
        )
        self._fs = fs
        self._on_unreadable_platform: Literal["raise", "deny"] = on_unreadable_platform
        self._windows = WINDOWS if windows is None else windows
        self._surface_policies = {Surface(k): v for k, v in (surface_policies or {}).items()}
        self._fingerprint_key: bytes | None = None
        self._strip_value_aliases = strip_value_aliases
        self._max_env_bytes = max_env_bytes
        self._allow_injection = frozenset(map(norm, name_list(allow_injection, "allow_injection")))
        self._known_safe = frozenset(map(norm, name_list(known_safe, "known_safe")))  # no warning
        self._mcp_network_trust = mcp_network_trust  # the proxy/CA family reaches MCP children
        self._lock = threading.Lock()
        self._sources: list[SecretSource] = []
        self._source_credentials: frozenset[str] = frozenset()
        self._dotenv_keys: set[str] = set()
        self._managed_keys: set[str] = set()
        self._managed_values: dict[str, str] | None = None
        # What the launch loads put into the process (values too: a host may pop a
        # secret from os.environ afterwards, and the alias rule must still know it).
        self._launch_values: Mapping[str, str] = MappingProxyType({})
        self._residue_keep: frozenset[str] | None = None  # global names + managed keys
        self._applied: set[str] = set()
        self._supplied: set[str] = set()
        self._granted: set[tuple[str, str]] = set()  # (upper key, value) granted: the guard
        self._census = AdapterCensus()
        self._policies: dict[str, tuple[HomeDeclarations, int, SecretPolicy]] = {}
        self._manifests: ManifestCache | None = None
        self._memo = BuildMemo()  # builds with no routed() binding (a binding has its own)
        self._binding: contextvars.ContextVar[Binding | None] = contextvars.ContextVar(
            f"envscope-binding-{id(self)}", default=None
        )

    # -- configuration -------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The catalog in force (the default one unless the host passed its own)."""
        if self._catalog is None:
            self._catalog = Catalog.default()
        return self._catalog

    @property
    def global_names(self) -> frozenset[str]:
        """Upper-cased names never stripped as launch residue."""
        if self._global_names is None:  # computed once: it is read on every routed build
            self._global_names = self.catalog.global_names | {norm(self.home_env_var)}
        return self._global_names

    def refuses_injection(self, upper_key: str) -> bool:
        """True when a scope, extra or passthrough may not introduce this name."""
        return (
            self.catalog.is_injection_vector(upper_key) and upper_key not in self._allow_injection
        )

    def environ_snapshot(self) -> dict[str, str]:
        """A copy of the process env this host reads (``os.environ`` unless one was passed)."""
        return snapshot_env(self._environ, "environ")

    def add_secret_source(self, source: SecretSource) -> None:
        """Register a secret source; ``load_launch_env`` and routed scopes consult it.

        The names in the source's optional ``credential_names`` become Tier 1 in
        this host's catalog (every home, every surface); cached policies are dropped.
        """
        from envscope.policy.sources import credential_names_of

        names = credential_names_of(source)
        with self._lock:
            self._sources.append(source)
            if names:
                detail = f"secret source {source.name}: credential_names"
                self._catalog = self.catalog.with_names(tier1=names, detail=detail)
                self._source_credentials |= {norm(n) for n in names}  # never granted (MCP)
                self._policies.clear()  # built from the old catalog

    # -- the launch env --------------------------------------------------

    def _launch_dotenv_path(self) -> str:
        return os.path.join(self.launch_home, ".env")

    def _read_managed(self) -> dict[str, str]:
        if self._managed_path is None:
            return {}
        values = read_dotenv(self._managed_path, override=True, missing_ok=False)
        with self._lock:
            self._managed_values = values
            self._managed_keys.update(values)
            self._residue_keep = self._never_residue() | {norm(k) for k in values}
        return values

    def load_launch_env(self) -> None:
        """Load the launch ``.env`` (no override), secret sources, the managed file (override)."""
        environ = self._environ
        values = read_dotenv(self._launch_dotenv_path(), environ=snapshot_env(environ))
        loaded = dict(values)
        with self._lock:
            self._dotenv_keys.update(values)
        for key, value in values.items():
            environ.setdefault(key, value)
        for source in list(self._sources):
            fetched = _fetch(source, self.launch_home)
            loaded.update(fetched)
            with self._lock:
                self._supplied.update(fetched)
            for key, value in fetched.items():
                if key in environ:
                    continue
                environ[key] = value
                with self._lock:
                    self._applied.add(key)
        for key, value in self._read_managed().items():
            environ[key] = value
        with self._lock:
            self._launch_values = MappingProxyType({**self._launch_values, **loaded})

    def launch_dotenv_keys(self) -> frozenset[str]:
        """Every key a non-managed dotenv load declared, for the process lifetime."""
        with self._lock:
            return frozenset(self._dotenv_keys)

    def managed_keys(self) -> frozenset[str]:
        """The keys of the administrator-managed dotenv file."""
        with self._lock:
            return frozenset(self._managed_keys)

    def source_applied_names(self) -> frozenset[str]:
        """Names a secret source put into the process env at launch."""
        with self._lock:
            return frozenset(self._applied)

    def source_supplied_names(self) -> frozenset[str]:
        """Names a secret source supplied at launch, applied or skipped."""
        with self._lock:
            return frozenset(self._supplied)

    def _managed(self) -> dict[str, str]:
        with self._lock:
            values = self._managed_values
        return self._read_managed() if values is None else values

    def _never_residue(self) -> frozenset[str]:
        """Global names and the catalog's network-trust family (upper-cased)."""
        return self.global_names | self.catalog.network_trust

    def _keep(self) -> frozenset[str]:
        """Names never stripped as residue: global names, network trust, managed keys."""
        keep = self._residue_keep
        if keep is None:  # the managed file is not loaded (or none is configured)
            keep = self._residue_keep = self._never_residue()
        return keep

    # -- routing -----------------------------------------------------------

    def _residue(self) -> tuple[frozenset[str], dict[str, Origin]]:
        """Upper-cased residue names with where each came from (re-reads the launch .env keys)."""
        path = self._launch_dotenv_path()
        current = read_dotenv(path, interpolate=False)
        origins: dict[str, Origin] = {}
        with self._lock:
            for name in self._supplied:
                origins[norm(name)] = Origin(OriginKind.SECRET_SOURCE, "launch secret source")
            for name in self._dotenv_keys | set(current):
                origins[norm(name)] = Origin(OriginKind.LAUNCH_DOTENV, "launch .env", path=path)
        return frozenset(origins), origins

    def _build_scope(self, home: str) -> tuple[dict[str, str], dict[str, Origin], frozenset[str]]:
        """A home's scope: its ``.env``, its secret-source values, then the managed keys."""
        dotenv_path = os.path.join(home, ".env")
        environ = snapshot_env(self._environ)
        outside = {k: v for k, v in environ.items() if norm(k) in self.global_names}
        scope: dict[str, str] = {}
        launch_path = self._launch_dotenv_path()
        if home == self.launch_home or not _same_file(dotenv_path, launch_path):
            # The launch .env under another name (a symlink, a hard link, a bind
            # mount) is still the launch profile's: its keys are residue, never scope.
            scope = read_dotenv(dotenv_path, environ=outside, override=True)
        origins = {norm(k): Origin(OriginKind.SCOPE, ".env", path=dotenv_path) for k in scope}
        names: set[str] = set()
        for source in list(self._sources):
            fetched = _fetch(source, home)
            scope.update(fetched)
            for key in fetched:
                names.add(norm(key))
                origins[norm(key)] = Origin(OriginKind.SECRET_SOURCE, source.name)
        for key, value in self._managed().items():
            scope[key] = value
            origins[norm(key)] = Origin(OriginKind.MANAGED, "managed", path=self._managed_path)
        return scope, origins, frozenset(names)

    @contextlib.contextmanager
    def routed(
        self, home: str | os.PathLike[str], scope: Mapping[str, str] | None = None
    ) -> Iterator[Binding]:
        """Bind a target home (and its scope) to the current thread or task."""
        identity = home_identity(home)
        routed = self.multiplex or identity != self.launch_home
        if not routed:
            binding = Binding(home=identity, routed=False)
        else:
            if scope is None:
                values, origins, names = self._build_scope(identity)
            else:
                values = snapshot_env(scope, "scope")
                caller = Origin(OriginKind.CALLER, "scope passed to routed()")
                origins = {norm(k): caller for k in values}
                names = frozenset()
            residue, residue_origins = self._residue()
            binding = Binding(
                launch_policy=self._policy_of(self.launch_home),
                home=identity,
                routed=True,
                scope=MappingProxyType(values),
                scope_origins=MappingProxyType(origins),
                source_names=names,
                residue=residue,
                residue_origins=MappingProxyType(residue_origins),
            )
        token = self._binding.set(binding)
        try:
            yield binding
        finally:
            self._binding.reset(token)

    def bound_home(self) -> str | None:
        """The home bound in this context, or None."""
        binding = self._binding.get()
        return None if binding is None else binding.home

    # -- policy and adapters -------------------------------------------------

    def _target(self, home: str | os.PathLike[str] | None) -> str:
        if home is not None:
            return home_identity(home)
        binding = self._binding.get()
        return self.launch_home if binding is None else binding.home

    def _cache(self) -> ManifestCache:
        """The host's manifest cache (created on first use: it imports cachetools)."""
        cache = self._manifests
        if cache is None:
            from envscope.manifests._cache import ManifestCache

            with self._lock:
                if self._manifests is None:
                    self._manifests = ManifestCache(
                        bundled_root=self._bundled,
                        fs=self._fs,
                        on_unreadable_platform=self._on_unreadable_platform,
                    )
                cache = self._manifests
        return cache

    def _declarations(self, home: str) -> HomeDeclarations:
        return self._cache().declarations(home, home)

    def manifest_declarations(
        self, home: str | os.PathLike[str] | None = None, *, strict: bool = False
    ) -> HomeDeclarations:
        """What the manifests of a home declare (raw, before the catalog's precedence).

        With ``strict`` an unreadable platform manifest raises whatever the
        host's mode; without it, it is reported in ``problems``.
        """
        target = self._target(home)
        mode: Literal["raise", "deny"] = "raise" if strict else "deny"
        return self._cache().declarations(target, target, on_unreadable_platform=mode)

    def policy(self, home: str | os.PathLike[str] | None = None) -> SecretPolicy:
        """The secret policy of a home (the bound home, else the launch home)."""
        return self._policy_of(self._target(home))

    def _policy_of(self, target: str) -> SecretPolicy:
        """The policy of a home given by identity (no ``realpath`` on the spawn path)."""
        declarations = self._declarations(target)
        version, adapters = self._census.of(target)
        with self._lock:
            cached = self._policies.get(target)
        if cached is not None and cached[0] is declarations and cached[1] == version:
            return cached[2]
        built = build_policy(self.catalog, declarations, adapters)
        with self._lock:
            self._policies[target] = (declarations, version, built)
        return built

    def register_adapter(
        self, name: str, requires_env: Iterable[str], home: str | os.PathLike[str] | None = None
    ) -> None:
        """Declare a runtime adapter for a home (default: the bound home, else the launch home)."""
        if not isinstance(name, str) or not name:
            raise ConfigurationError("register_adapter: an adapter name must be a non-empty string")
        names = name_list(requires_env, "requires_env")
        self._census.register(self._target(home), name, names)

    def unregister_adapter(self, name: str, home: str | os.PathLike[str] | None = None) -> None:
        """Remove a runtime adapter from a home's census (no error when absent)."""
        self._census.unregister(self._target(home), name)

    # -- the factory -------------------------------------------------------------

    def build_subprocess_env(
        self,
        base: Mapping[str, str] | None = None,
        *,
        surface: Surface | str = Surface.TERMINAL,
        extra: Mapping[str, object] | None = None,
        inherit_credentials: bool = False,
        strip_launch_profile: bool = True,
        passthrough: Sequence[str] = (),
        scrub: bool = True,
        trace: Trace | None = None,
        grant: Sequence[str] = (),
    ) -> dict[str, str]:
        """Build one child env: strip residue → overlay scope → managed keys → sanitise.

        On the ``mcp`` surface ``extra`` is the server's env block, the
        operator's grant to that one server: its names pass as configured,
        except a value that is a secret the host holds (unless the key is in
        ``grant``), an injection vector, or an exported shell function.
        """
        surface = _surface(surface)
        passthrough = name_list(passthrough, "passthrough", allow_empty=True)
        granted = frozenset(map(norm, name_list(grant, "grant")))
        if granted and surface is not Surface.MCP:
            raise ConfigurationError("grant: only the mcp surface takes a server's env block grant")
        if granted:  # the runtime guard lets these values pass (docs/guard.md)
            with self._lock:
                self._granted.update(
                    (norm(k), v) for k, v in coerce_extra(extra).items() if norm(k) in granted
                )
        if base is None:
            snapshot = process = snapshot_env(self._environ, "environ")
        else:
            snapshot = snapshot_env(base)
            # The process env too: the alias rule knows its secrets whatever the base holds.
            process = snapshot_env(self._environ, "environ")
        extras = coerce_extra(extra)
        if not scrub:
            return {**snapshot, **extras}
        binding = self._binding.get()
        if binding is None and self.multiplex and surface.needs_routed_home:
            raise RoutingError(
                f"a {surface.value} child under multiplex needs a routed home: "
                "bind one with host.routed(home) (refusing to hand out launch values)"
            )
        target = self.launch_home if binding is None else binding.home
        routed = self.multiplex if binding is None else binding.routed
        policy = self._policy_of(target)  # the manifest stamp: checked on every build
        supplied = None
        if surface.is_allowlist:
            supplied = self.source_supplied_names()
            if binding is not None:
                supplied = supplied | binding.source_names
        memo: BuildMemo | None = self._memo if binding is None else binding.memo
        if binding is None and routed:
            memo = None  # the launch residue is re-read per build: nothing to compare
        record_into = trace
        if memo is not None:
            shape = (
                surface,
                inherit_credentials,
                strip_launch_profile,
                tuple(passthrough),
                tuple(extras.items()),  # each MCP server's env block is its own shape
                granted,
                trace is not None,  # a traced build keeps its decisions too
            )
            same = (policy, self._managed_values, self._keep(), self._launch_values)
            equal = (snapshot, supplied, None if base is None else process)
            hit = memo.get(shape, same, equal)
            if hit is not None:
                child, recording = hit
                if trace is not None and recording is not None:
                    trace.replay(recording)
                return child
            if trace is not None:  # record values where fingerprints go; kept and replayed
                record_into = Trace(fingerprint=keep_value)
        child = self._build(
            snapshot, process, extras, binding, target, routed, policy, supplied, surface,
            inherit_credentials, strip_launch_profile, passthrough, granted, record_into,
        )  # fmt: skip
        if memo is not None:
            recording = None
            if trace is not None and record_into is not None:
                recording = record_into.recording()
                trace.replay(recording)
            # Stored under the identities read *before* the build: should another thread
            # replace the managed values meanwhile, the next build misses, never goes stale.
            memo.put(shape, same, equal, child, recording)
        return child

    def _build(
        self,
        snapshot: dict[str, str],
        process: dict[str, str],
        extras: dict[str, str],
        binding: Binding | None,
        target: str,
        routed: bool,
        policy: SecretPolicy,
        supplied: frozenset[str] | None,
        surface: Surface,
        inherit_credentials: bool,
        strip_launch_profile: bool,
        passthrough: Sequence[str],
        granted: frozenset[str],
        trace: Trace | None,
    ) -> dict[str, str]:
        """The four stages of one build (``build_subprocess_env`` has checked and memoised)."""
        fold = self._windows  # Windows names fold: the child holds one spelling per name
        parent = entries = stages.to_entries(snapshot, trace, fold=fold)
        scope: Mapping[str, str] = {} if binding is None else binding.scope
        launch_policy = None
        if routed:
            # The launch policy is checked once per routed() binding (with the
            # residue), not on every build: one manifest stamp per build.
            if binding is not None and binding.launch_policy is not None:
                launch_policy = binding.launch_policy
            else:
                launch_policy = self._policy_of(self.launch_home)
            managed = self._managed()
            if strip_launch_profile:
                policies = (policy,) if launch_policy is policy else (policy, launch_policy)
                keep = self._keep()
                if binding is None:  # unbound multiplex: the residue is re-read per build
                    rule = ResidueRule(self.launch_residue(), keep, policies)
                else:
                    rule = binding.residue_rule(keep, policies)
                entries = stages.strip_residue(entries, rule=rule, trace=trace)
            origins = None if binding is None else binding.scope_origins
            entries = stages.overlay_scope(
                entries,
                scope,
                origins=origins,
                home=target,
                trace=trace,
                refuse=self.refuses_injection,
                fold=fold,
            )
            entries = stages.apply_managed(
                entries, managed, path=self._managed_path, trace=trace, fold=fold
            )
        surface_policy = self._surface_policies.get(surface)
        allowlist = None
        if supplied is not None:
            allowlist = mcp_allowlist(
                windows=self._windows,
                supplied=frozenset(map(norm, supplied)),
                network_trust=self.catalog.network_trust
                if self._mcp_network_trust
                else frozenset(),
            )
        base_filter = None
        if allowlist is not None or surface_policy is not None:
            base_filter = BaseFilter(allowlist, surface_policy, self._windows)
        surface_set = {} if surface_policy is None else surface_policy.set_env
        options = SanitizeOptions(
            extra=extras,
            inherit_credentials=inherit_credentials or surface.inherits_credentials,
            passthrough=tuple(passthrough),
            passthrough_source=(
                None
                if not passthrough
                else stages.to_entries(scope, fold=fold)
                if routed
                else entries
            ),
            base_filter=base_filter,
            drop_shell_functions=surface is Surface.MCP,
            # A routed child is told its own home on every surface; a worker always.
            pinned={self.home_env_var: target} if routed or surface is Surface.WORKER else {},
            surface_set=surface_set,
            refuse=self.refuses_injection,
            launch_policy=None if launch_policy is policy else launch_policy,
            own=_own_values(binding) if routed else {},
            # every spelling, even where names fold (passthrough compares against each)
            launch_env=parent
            if not fold or not passthrough
            else stages.to_entries(snapshot, fold=False),
            secrets=SecretValues() if self._strip_value_aliases else None,
            extra_is_grant=surface is Surface.MCP,
            grant=granted,
            ungrantable=self._source_credentials,
            fold=fold,
        )
        if options.secrets is not None:
            self._collect_secrets(options, policy, snapshot, process, scope, surface_set)
        child = sanitize(entries, policy, options, trace=trace)
        stages.validate_block(child, max_total_bytes=self._max_env_bytes, trace=trace)
        if trace is not None:
            from envscope.audit._findings import (
                finish_trace,  # loads re: only a traced build needs it
            )

            finish_trace(
                trace,
                child,
                global_names=self.global_names,
                catalog=self.catalog,
                policy=policy,
                home=target,
                surface=surface,
                routed=routed,
                known_safe=self._known_safe,
            )
        return child

    def _collect_secrets(
        self,
        options: SanitizeOptions,
        policy: SecretPolicy,
        snapshot: Mapping[str, str],
        process: Mapping[str, str],
        scope: Mapping[str, str],
        surface_set: Mapping[str, str],
    ) -> None:
        """Every secret value this build knows of, for the alias rule (DESIGN.md §3)."""
        secrets = options.secrets
        assert secrets is not None

        def declare(up: str) -> Declaration | None:
            return options.declaration(policy, up)

        for values in (snapshot, process, self._launch_values, self._managed_values or {}):
            secrets.collect(values.items(), declare)
        if not options.extra_is_grant:  # an MCP server's block holds the operator's literals
            secrets.collect(options.extra.items(), declare)
        secrets.collect(surface_set.items(), declare)
        secrets.collect(scope.items(), policy.declaration, scope=True)

    def _key(self) -> bytes:
        key = self._fingerprint_key
        if key is None:
            from envscope.audit._fingerprint import FINGERPRINT_ENV, load_or_create_key

            key = load_or_create_key(self.launch_home, self._environ.get(FINGERPRINT_ENV))
            self._fingerprint_key = key
        return key

    def fingerprint(self, name: str, value: str) -> str:
        """A short keyed fingerprint of ``name=value`` (the key is this host's; docs/audit.md)."""
        from envscope.audit._fingerprint import fingerprint

        return fingerprint(self._key(), name, value)

    def fingerprint_key_id(self) -> str:
        """The public id of this host's fingerprint key (snapshots carry it)."""
        from envscope.audit._fingerprint import key_id

        return key_id(self._key())

    def launch_residue(self) -> frozenset[str]:
        """Upper-cased residue names right now (recorded keys, launch .env keys, supplied names)."""
        return self._residue()[0]

    def guard_rule(self) -> GuardRule:
        """What a spawn in this context may not carry: the runtime guard's rule (docs/guard.md)."""
        binding = self._binding.get()
        target = self.launch_home if binding is None else binding.home
        routed = self.multiplex if binding is None else binding.routed
        policy = self._policy_of(target)
        launch_policy = self._policy_of(self.launch_home) if routed else None
        with self._lock:
            granted = frozenset(self._granted)
        return GuardRule(
            policy,
            None if launch_policy is policy else launch_policy,
            host_values=(
                snapshot_env(self._environ, "environ"),
                self._launch_values,
                self._managed_values or {},
            ),
            scope={} if binding is None else binding.scope,
            own=_own_values(binding) if routed else {},
            granted=granted,
        )

    def explain(self, base: Mapping[str, str] | None = None, **kwargs: object) -> Trace:
        """Run a build with a fresh, fingerprinting trace and return the trace."""
        trace = Trace(fingerprint=self.fingerprint)
        self.build_subprocess_env(base, trace=trace, **kwargs)  # type: ignore[arg-type]
        return trace
