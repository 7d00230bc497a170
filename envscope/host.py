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
import time
from collections.abc import Container, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from envscope._admissions import Admissions
from envscope._host_options import host_options
from envscope._inputs import (
    DEFAULT_MAX_ENV_BYTES,
    build_arguments,
    check_flags,
    copy_env,
    home_directory,
    home_identity,
    name_list,
    snapshot_env,
)
from envscope._launch import LaunchState
from envscope._lru import LRU
from envscope.audit.trace import NULL_TRACE, Trace, check_trace
from envscope.errors import ConfigurationError, RoutingError, SourceError
from envscope.manifests._home_policies import HomePolicies
from envscope.pipeline._binding import Binding, HomeShare
from envscope.pipeline._memo import BuildMemo
from envscope.pipeline.build import (
    BuildRequest,
    build,
    check_parent_envs,
    context_rule,
    parent_env,
    unscrubbed,
)
from envscope.pipeline.decision import RuleVerdicts
from envscope.pipeline.secret_rule import SecretRule
from envscope.pipeline.stages import FORCE_PREFIX
from envscope.policy._declarations import (
    EMPTY_MAPPING,
    HomeDeclarations,
    Origin,
    OriginKind,
    norm,
)
from envscope.policy._secret_policy import SecretPolicy
from envscope.policy.surfaces import Surface, SurfacePolicy, surface_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, MutableMapping, Sequence
    from typing import Literal

    from envscope.audit._fingerprint import HostKey
    from envscope.files._fs import FileSystem
    from envscope.policy.catalog import Catalog  # loaded on first use (the catalog property)
    from envscope.policy.sources import SecretSource

__all__ = ["MAX_HOMES", "Binding", "Host", "home_identity"]

MAX_HOMES = 256
"""Homes whose manifests, policy, scope and residue verdicts a host keeps (LRU)."""


class Host:
    """Builds child environments for one agent host process (docs/api.md)."""

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
        change_notification: bool | None = None,
        refuse_redirecting: bool = False,
        mcp_families: Iterable[str] = (),
        drop_refused_extra: bool = False,
        name_context: bool = True,
    ) -> None:
        self.launch_home = home_identity(launch_home)
        check_flags({"multiplex": multiplex})
        if not os.path.isdir(self.launch_home):  # a typo would hide the launch manifests
            raise ConfigurationError(
                f"{self.launch_home}: the launch home is not a directory (a typo?)"
            )
        self.multiplex = multiplex
        self._options = options = host_options(
            catalog=catalog,
            managed_env_file=managed_env_file,
            bundled_plugins=bundled_plugins,
            home_env_var=home_env_var,
            global_names=global_names,
            fs=fs,
            on_unreadable_platform=on_unreadable_platform,
            windows=windows,
            surface_policies=surface_policies,
            strip_value_aliases=strip_value_aliases,
            max_env_bytes=max_env_bytes,
            allow_injection=allow_injection,
            known_safe=known_safe,
            mcp_network_trust=mcp_network_trust,
            change_notification=change_notification,
            refuse_redirecting=refuse_redirecting,
            mcp_families=mcp_families,
            drop_refused_extra=drop_refused_extra,
            name_context=name_context,
        )
        self._catalog = catalog
        self._environ: MutableMapping[str, str] = os.environ if environ is None else environ
        self._launch = LaunchState(
            self.launch_home,
            self._environ,
            options.managed_path,
            self._never_residue,
            maxsize=MAX_HOMES,
            clock=time.time_ns if fs is None else fs.now_ns,
        )
        self._fs = fs
        self._host_key: HostKey | None = None  # made on first use (it loads hashlib, secrets)
        # the catalog in force and the global names under it (made on first use: _globals)
        self._catalog_globals: tuple[Catalog, frozenset[str]] | None = None
        self._check_surface_sets()
        self._lock = threading.Lock()
        self._source_credentials: frozenset[str] = frozenset()
        self._admitted = Admissions()  # handed over as given, per home: the guard, testing
        # Per home, bounded like the manifest cache (LRU): its declarations and policy, and the
        # residue rule and build memo its bindings share. Retention (names only) lives in the
        # manifest cache.
        self._homes = HomePolicies(
            bundled_root=options.bundled_root,
            fs=fs,
            on_unreadable_platform=options.on_unreadable_platform,
            change_notification=options.change_notification,
            maxsize=MAX_HOMES,
        )
        self._shares: LRU[str, HomeShare] = LRU(MAX_HOMES)
        # a home's last scope passed to routed(home, scope=...), by value: an equal one again
        # reuses the share (its memo, residue verdicts and rule), as the home's files do
        self._caller_shares: LRU[str, HomeShare] = LRU(MAX_HOMES)
        self._memo = BuildMemo()  # builds with no routed() binding (a binding has its own)
        self._binding: contextvars.ContextVar[Binding | None] = contextvars.ContextVar(
            f"envscope-binding-{id(self)}", default=None
        )

    # -- configuration -------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The catalog in force (the default one unless the host passed its own)."""
        if self._catalog is None:
            from envscope.policy.catalog import Catalog

            self._catalog = Catalog.default()
        return self._catalog

    @property
    def home_env_var(self) -> str:
        """The variable that tells a routed child (and every worker) its home."""
        return self._options.home_env_var

    @property
    def global_names(self) -> frozenset[str]:
        """Upper-cased names never stripped as launch residue."""
        return self._globals()[1]

    def refuses_injection(self, upper_key: str) -> bool:
        """True when a scope, extra, passthrough or secret source may not introduce this name."""
        return self._options.refuses(upper_key, self.catalog)

    def _check_surface_sets(self) -> None:
        """A surface policy's ``set`` may not introduce an injection vector (an error)."""
        for surface, policy in self._options.surface_policies.items():
            for key in policy.set_env:
                if self.refuses_injection(key.upper()):
                    raise ConfigurationError(
                        f"surfaces.{surface.value}.set: {key} makes a child load or run "
                        "other code (an injection vector); allow it with allow_injection"
                    )

    def environ_snapshot(self) -> dict[str, str]:
        """A copy of the process env this host reads (``os.environ`` unless one was passed)."""
        return snapshot_env(self._environ, "environ")

    def add_secret_source(
        self,
        source: SecretSource,
        *,
        on_failure: Literal["raise", "unset"] = "raise",
        ttl: float | None = None,
    ) -> None:
        """Register a secret source; ``load_launch_env`` and routed scopes consult it.

        The names in the source's optional ``credential_names`` become Tier 1 in
        this host's catalog (every home, every surface); cached policies are dropped.
        ``on_failure``: a ``SourceError`` from the source stops the launch load or the
        binding (``"raise"``), or leaves its names unset (``"unset"``: the failure is
        kept in ``source_failures()``; its ``supplied_names`` are still its own).
        ``ttl`` (seconds): a ``routed()`` binding reuses what the source answered for
        its home that long after the source answered (a warm binding never waits on a
        vault); ``None``: it asks the source every time. ``load_launch_env()`` always asks.
        """
        from envscope.policy._source_entries import seconds_problem
        from envscope.policy.sources import check_source, credential_names_of

        check_source(source, "add_secret_source")
        if on_failure not in ("raise", "unset"):
            raise ConfigurationError(
                f"add_secret_source: on_failure must be 'raise' or 'unset', not {on_failure!r}"
            )
        problem = None if ttl is None else seconds_problem(ttl)  # a config file's rule too
        if problem is not None:
            raise ConfigurationError(f"add_secret_source: ttl {problem}, or None")
        names = credential_names_of(source)
        self._launch.add_source(source, unset_on_failure=on_failure == "unset", ttl=ttl)
        with self._lock:
            if names:
                detail = f"secret source {source.name}: credential_names"
                self._catalog = self.catalog.with_names(tier1=names, detail=detail)
                self._source_credentials |= {norm(n) for n in names}  # never granted (MCP)

    # -- the launch env --------------------------------------------------

    def load_launch_env(self) -> None:
        """Load the launch ``.env`` (no override), secret sources, the managed file (override)."""
        self._launch.load()

    def launch_dotenv_keys(self) -> frozenset[str]:
        """Every key a non-managed dotenv load declared, for the process lifetime."""
        return self._launch.dotenv_keys()

    def managed_keys(self) -> frozenset[str]:
        """The keys of the administrator-managed dotenv file."""
        return self._launch.managed_keys()

    def source_applied_names(self) -> frozenset[str]:
        """Names a secret source put into the process env at launch."""
        return self._launch.applied_names()

    def source_failures(self) -> tuple[SourceError, ...]:
        """The last ``SourceError`` of each source and home that ``on_failure="unset"`` absorbed."""
        return self._launch.failures()

    def source_supplied_names(self) -> frozenset[str]:
        """Names a secret source supplied at launch, applied or skipped."""
        return self._launch.supplied_names()

    def source_names_here(self) -> frozenset[str]:
        """Names a secret source supplied at launch and, under ``routed(home)``, for that home."""
        return self._supplied(self._binding.get())

    def _never_residue(self) -> frozenset[str]:
        """Global names and the catalog's network-trust family (upper-cased)."""
        return self.global_names | self.catalog.network_trust

    @contextlib.contextmanager
    def routed(
        self, home: str | os.PathLike[str], scope: Mapping[str, str] | None = None
    ) -> Iterator[Binding]:
        """Bind a target home (and its scope) to the current thread or task."""
        identity, directory = home_directory(home)
        routed = self.multiplex or identity != self.launch_home
        if routed and identity != self.launch_home and not directory:
            raise RoutingError(f"{identity}: the routed home is not a directory (a typo?)")
        if not routed:
            binding = Binding(home=identity, routed=False)
        else:
            share = None
            launch = self._launch.launch_signature()  # one stat for the scope and the residue
            if scope is None:  # cached under the files' signatures (sources fetched anew)
                values, origins, names = self._launch.scope(identity, self.global_names, launch)
                with self._lock:
                    share = self._shares.hit(identity)
            else:
                given = snapshot_env(scope, "scope")
                with self._lock:
                    share = self._caller_shares.hit(identity)
                if share is not None and share.scope == given:  # an equal scope: its objects
                    values, origins = share.scope, share.scope_origins
                else:
                    values = MappingProxyType(given)
                    caller = Origin(OriginKind.CALLER, "scope passed to routed()")
                    origins = MappingProxyType({norm(k): caller for k in values})
                names = frozenset()
            residue, residue_origins = self._launch.residue_under(launch)
            fresh = share is None or not share.fits(values, origins, residue, residue_origins)
            if fresh:
                share = HomeShare(values, origins, residue, residue_origins)
            assert share is not None
            binding = Binding(
                launch_policy=self._policy_of(self.launch_home),
                home=identity,
                routed=True,
                scope=values,
                scope_origins=origins,
                source_names=names,
                residue=residue,
                residue_origins=residue_origins,
                share=share,
            )
            if fresh:
                with self._lock:  # the home's residue verdicts and memo, for its next binding
                    (self._shares if scope is None else self._caller_shares).put(identity, share)
        token = self._binding.set(binding)
        try:
            yield binding
        finally:
            self._binding.reset(token)

    def bound_home(self) -> str | None:
        """The home bound in this context, or None."""
        binding = self._binding.get()
        return None if binding is None else binding.home

    @property
    def windows(self) -> bool:
        """True when this host builds with Windows semantics (names fold)."""
        return self._options.fold

    # -- policy and adapters -------------------------------------------------

    def _target(self, home: str | os.PathLike[str] | None) -> str:
        if home is not None:
            return home_identity(home)
        binding = self._binding.get()
        return self.launch_home if binding is None else binding.home

    def manifest_declarations(
        self, home: str | os.PathLike[str] | None = None, *, strict: bool = False
    ) -> HomeDeclarations:
        """What the manifests of a home declare (raw, before the catalog's precedence).

        With ``strict`` an unreadable platform manifest raises whatever the
        host's mode; without it, it is reported in ``problems``.
        """
        target = self._target(home)
        mode: Literal["raise", "deny"] = "raise" if strict else "deny"
        return self._homes.declarations(target, on_unreadable_platform=mode)

    def policy(self, home: str | os.PathLike[str] | None = None) -> SecretPolicy:
        """The secret policy of a home (the bound home, else the launch home)."""
        return self._policy_of(self._target(home))

    def _policy_of(self, target: str) -> SecretPolicy:
        """The policy of a home given by identity (no ``realpath`` on the spawn path)."""
        return self._homes.policy(target, self.catalog)

    def register_adapter(
        self, name: str, requires_env: Iterable[str], home: str | os.PathLike[str] | None = None
    ) -> None:
        """Declare a runtime adapter for a home (default: the bound home, else the launch home)."""
        if not isinstance(name, str) or not name:
            raise ConfigurationError("register_adapter: an adapter name must be a non-empty string")
        names = name_list(requires_env, "requires_env")
        self._homes.census.register(self._target(home), name, names)

    def unregister_adapter(self, name: str, home: str | os.PathLike[str] | None = None) -> None:
        """Remove a runtime adapter from a home's census (no error when absent)."""
        self._homes.census.unregister(self._target(home), name)

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
        resolved: Sequence[str] = (),
        own: Sequence[str] = (),
    ) -> dict[str, str]:
        """Build one child env: strip residue → overlay scope → managed keys → sanitise.

        ``grant`` names keys of ``extra`` (exact spellings) this one child
        receives as given, whatever their tier (a secret source's credential
        never). On the ``mcp`` surface ``extra`` is the server's env block, the
        operator's grant to that one server: its names pass as configured,
        except a value that holds a secret the host holds (unless the key is
        in ``grant``), an injection vector, or an exported shell function.
        ``resolved`` names block keys whose value the host resolved (a
        ``${NAME}`` reference, an ``envFile``, a forwarded name) rather than the
        operator typed: such a value is the host's, never an operator literal, so
        a credential format in it is refused unless granted (``mcp`` only).
        ``own`` names block keys the routed profile typed into its own MCP
        config (a file in its home): such a value is compared with the
        profile's own secrets only, never the launch profile's (no oracle;
        ``mcp`` only, and only a routed build takes it as the profile's).
        """
        surface = surface_of(surface)
        check_trace(trace)
        flags = {
            "inherit_credentials": inherit_credentials,
            "strip_launch_profile": strip_launch_profile,
            "scrub": scrub,
        }
        passthrough, granted, extras, references, typed = build_arguments(
            extra, passthrough, grant, flags, resolved, own
        )
        for what, keys in (("resolved", references), ("own", typed)):
            if keys and surface is not Surface.MCP:
                raise ConfigurationError(
                    f"{what}: names keys of an MCP server's env block (mcp only)"
                )
        process = copy_env(self._environ, "environ")  # checked when the build runs
        snapshot = process if base is None else copy_env(base)
        if not scrub:
            check_parent_envs(snapshot, None if base is None else process)
            return unscrubbed({**snapshot, **extras}, NULL_TRACE if trace is None else trace)
        request = self._request(
            snapshot, None if base is None else process, extras, surface=surface,
            inherit_credentials=inherit_credentials, strip_launch_profile=strip_launch_profile,
            passthrough=passthrough, granted=granted, resolved=references, own=typed,
        )  # fmt: skip
        binding = request.binding
        memo = self._memo if binding is None else binding.memo
        memo_of = None if binding is None and request.routed else memo
        child = build(request, memo_of, NULL_TRACE if trace is None else trace)
        if trace is not None and trace.enabled:
            trace.context.warnings.extend(self._launch.unset_warnings(request.target))
        self._admit(request, child)  # the guard learns what this build handed over as given
        return child

    def _request(
        self,
        snapshot: dict[str, str],
        process: dict[str, str] | None,
        extras: dict[str, str],
        *,
        surface: Surface,
        inherit_credentials: bool,
        strip_launch_profile: bool = True,
        passthrough: tuple[str, ...] = (),
        granted: frozenset[str] = frozenset(),
        resolved: frozenset[str] = frozenset(),
        own: frozenset[str] = frozenset(),
    ) -> BuildRequest:
        """Everything one build in this context reads (the manifest stamp checked on the way)."""
        binding = self._binding.get()
        if binding is None and self.multiplex and surface.needs_routed_home:
            raise RoutingError(
                f"a {surface.value} child under multiplex needs a routed home: "
                "bind one with host.routed(home) (refusing to hand out launch values)"
            )
        target = self.launch_home if binding is None else binding.home
        routed = self.multiplex if binding is None else binding.routed
        launch = self._launch
        if launch.managed_path is not None and not launch.loaded:
            raise ConfigurationError(
                f"the managed file {launch.managed_path} is configured but was never loaded: "
                "call host.load_launch_env() before building a child env (the administrator's "
                "pins would be skipped)"
            )
        catalog, global_names = self._globals()
        return BuildRequest(
            options=self._options,
            catalog=catalog,
            global_names=global_names,
            surface=surface,
            inherit_credentials=inherit_credentials,
            strip_launch_profile=strip_launch_profile,
            passthrough=passthrough,
            extras=extras,
            granted=granted,
            resolved=resolved,
            own=own,
            snapshot=snapshot,
            process=process,
            supplied=self._supplied(binding) if surface.is_allowlist else None,
            applied=launch.applied_names(),
            binding=binding,
            target=target,
            routed=routed,
            # the manifest stamp: checked on every build (``_policy_of``, the catalog in hand)
            policy=self._homes.policy(target, catalog),
            launch_policy=self._launch_policy(binding) if routed else None,
            # one object while the file is unchanged (the memo compares it by identity)
            managed=(launch.managed() if routed else launch.managed_values) or EMPTY_MAPPING,
            keep=launch.keep(),
            launch_values=launch.launch_values,
            ungrantable=self._source_credentials,
            launch_residue=self._launch.residue() if routed and binding is None else None,
        )

    def _admit(self, request: BuildRequest, child: Mapping[str, str]) -> None:
        """Tell the runtime guard the (key, value) pairs this build handed over as given.

        A granted key, an MCP server's block entry, or a forced hand-over
        (``_ENVSCOPE_FORCE_X`` unwrapped to ``X``) that the child holds with the
        caller's value: the guard passes it under that key in an explicit env.
        """
        extras = request.extras
        if not extras:
            return  # nothing the caller gave: nothing handed over as given
        given = {k: extras[k] for k in request.granted} if request.granted else {}
        if request.surface is Surface.MCP:
            given.update(extras)
        for key, value in extras.items():
            if key.upper().startswith(FORCE_PREFIX):
                given.setdefault(key[len(FORCE_PREFIX) :], value)
        if given:
            admitted = [(k, v) for k, v in given.items() if child.get(k) == v]
            self._admitted.admit(request.target, admitted)

    def _supplied(self, binding: Binding | None) -> frozenset[str]:
        """Names a secret source supplied, at launch and (routed) for the bound home."""
        supplied = self.source_supplied_names()
        if binding is None or not binding.source_names:
            return supplied  # the launch set itself: the build memo compares it by identity first
        return supplied | binding.source_names

    def _globals(self) -> tuple[Catalog, frozenset[str]]:
        """The catalog in force and the global names under it (made again when it changes)."""
        made = self._catalog_globals
        catalog = self.catalog
        if made is None or made[0] is not catalog:
            made = (catalog, self._options.global_names(catalog))
            self._catalog_globals = made  # one assignment: a racing build makes an equal one
        return made

    def _launch_policy(self, binding: Binding | None) -> SecretPolicy:
        """The launch home's policy, checked once per routed() binding (with the residue)."""
        if binding is not None and binding.launch_policy is not None:
            return binding.launch_policy
        return self._policy_of(self.launch_home)

    def _key(self) -> HostKey:
        found = self._host_key
        if found is None:
            from envscope.audit._fingerprint import HostKey

            found = self._host_key = HostKey(self.launch_home, self._environ)
        return found

    def fingerprint(self, name: str, value: str) -> str:
        """A short keyed fingerprint of ``name=value`` (the key is this host's; docs/audit.md)."""
        return self._key().function()(name, value)

    def fingerprint_key_id(self) -> str:
        """The public id of this host's fingerprint key (snapshots carry it)."""
        return self._key().key_id()

    def launch_residue(self) -> frozenset[str]:
        """Upper-cased residue names right now (recorded keys, launch .env keys, supplied names)."""
        return self._launch.residue()[0]

    def secret_rule(
        self,
        *,
        surface: Surface | str = Surface.TERMINAL,
        inherit_credentials: bool = False,
        extra: Mapping[str, object] | None = None,
    ) -> SecretRule:
        """The one secret rule of a build in this context (the guard, the CLI, testing ask it).

        The same rule ``build_subprocess_env`` applies for these arguments: which
        names are declared for the child, which values are secrets it may not get.
        Kept by the context's memo owner while its inputs stay the same.
        """
        return self._context_verdicts(surface, extra, inherit_credentials).rule

    def _context_verdicts(
        self,
        surface: Surface | str = Surface.TERMINAL,
        extra: Mapping[str, object] | None = None,
        inherit_credentials: bool = False,
    ) -> RuleVerdicts:
        """This context's rule with its verdicts remembered (``pipeline.build.context_rule``)."""
        request = self._request_here(surface, extra, inherit_credentials)
        binding = request.binding
        if binding is None:
            return context_rule(request, None if request.routed else self._memo)
        return context_rule(request, binding.memo)

    def parent_env(self) -> dict[str, str]:
        """The env a build in this context starts from: stages 1-3 over the process env.

        Under ``routed(home)``: the launch residue stripped, the home's scope and
        the managed keys over it; else a copy of the process env.
        """
        return parent_env(self._request_here(Surface.TERMINAL, None, False))

    def _request_here(
        self, surface: Surface | str, extra: Mapping[str, object] | None, inherit: bool
    ) -> BuildRequest:
        """The request a build in this context would make (no base, no passthrough, no grant)."""
        _, _, extras, _, _ = build_arguments(extra, (), (), {"inherit_credentials": inherit})
        process = snapshot_env(self._environ, "environ")
        return self._request(
            process, None, extras, surface=surface_of(surface), inherit_credentials=inherit
        )

    def _built_here(self, env: Mapping[str, str]) -> bool:
        """True when ``env`` is a child a build in this context made (its memo still holds it).

        The runtime guard's first question about an explicit env (``factory-built``):
        the factory decided each of its entries, and every env it builds passes.
        """
        binding = self._binding.get()
        return (self._memo if binding is None else binding.memo).holds(env)

    def _admitted_here(self) -> Container[tuple[str, str]]:
        """The pairs builds for this context's home handed over as given (the guard's view)."""
        return self._admitted.pairs(self._target(None))

    def admitted(self, key: str, value: str, home: str | os.PathLike[str] | None = None) -> bool:
        """True when a build for this home handed ``key=value`` over as given.

        A grant or an MCP block entry, admitted by a build for ``home`` (default:
        the bound home, else the launch home): a pair one home's build admitted
        never passes in another home's context.
        """
        return self._admitted.admitted(self._target(home), key, value)

    def reset_admissions(self) -> None:
        """Forget what builds handed over as given (every home)."""
        self._admitted.reset()

    def explain(self, base: Mapping[str, str] | None = None, **kwargs: object) -> Trace:
        """Run a build with a fresh, fingerprinting trace and return the trace."""
        trace = Trace(fingerprint=self._key().function())  # the key read once per host
        self.build_subprocess_env(base, trace=trace, **kwargs)  # type: ignore[arg-type]
        return trace
