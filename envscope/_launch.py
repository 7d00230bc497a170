"""The host's launch state: what the launch profile put into the process.

``LaunchState`` loads the launch ``.env``, the secret sources and the
administrator-managed file into the process env, remembers which keys each
load declared (and their values: a host may pop a secret from ``os.environ``
afterwards, and the alias rule must still know it), and reads a routed home's
scope and the launch residue. It is part of the host layer: with ``Host`` the
only code that reads the file system and the process env for a build.

Per-spawn cost. A host that enters ``routed(home)`` for every spawn asks for the
home's scope and the launch residue every time. Both are cached under the
files' signatures (``stat``: mode, device, inode, size, mtime and ctime, with
git's racy rule: a file changed within ``RACY_WINDOW_NS`` of the clock is
never trusted, so it is read again):

- a home's ``.env`` values under its own signature, the launch ``.env``'s (the
  launch file under another name reads as empty) and the interpolation inputs
  (the host's global names' values);
- the scope under those values (the same object), what each secret source
  fetched (equal values) and the managed values (equal values): the scope
  is then the very same objects, so the host's per-home residue verdicts and
  build memo still hold;
- the residue under the launch ``.env``'s signature and the launch loads.

**A secret source's values are never cached**: every ``routed()`` fetches them
again (a rotated or revoked value is never served from memory, and a fetch
that fails raises, failing closed); only the scope *built* from equal values is
reused. Both caches are bounded (LRU, ``maxsize`` homes).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from envscope._inputs import (
    check_env,
    config_entry_error,
    current_env,
    env_entries,
    snapshot_env,
)
from envscope._lru import LRU
from envscope.errors import SourceError
from envscope.files._dotenv import read_dotenv
from envscope.policy._declarations import Origin, OriginKind, norm
from envscope.policy.sources import declared_names_of, source_detail

if TYPE_CHECKING:
    from envscope.audit.trace import BuildWarning
    from envscope.policy.sources import SecretSource

__all__ = [
    "RACY_WINDOW_NS",
    "SOURCE_HOMES_KEPT",
    "LaunchState",
    "Scope",
    "fetch_source",
    "file_signature",
]

RACY_WINDOW_NS = 3_000_000_000
"""As the manifest probe's: a 2 s timestamp granularity (FAT) plus clock slack."""
SOURCE_HOMES_KEPT = 256
"""How many homes' answers a secret source with a TTL keeps (the least recent goes first)."""
FAILURES_KEPT = 4096  # (source, home) failures left unset: their warnings, oldest out first


def _now() -> float:
    """The clock a source's TTL is counted on (``time.monotonic``; a test seam)."""
    return time.monotonic()


Scope = tuple[Mapping[str, str], Mapping[str, Origin], frozenset[str]]
"""A routed home's scope values, where each came from, and the names secret sources supplied."""
_Answer = tuple[float, dict[str, str]]  # when it expires (``_now``'s clock), what the source said

FileSignature = tuple[int, int, int, int, int, int]


def file_signature(path: str, now_ns: int) -> FileSignature | None:
    """A settled file's ``stat`` signature; None when it cannot be stat-ed or is racy.

    None is never trusted: the caller reads the file again. ``now_ns`` is the
    clock file times are compared with (the host's file-system seam's).
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if now_ns < max(st.st_mtime_ns, st.st_ctime_ns) + RACY_WINDOW_NS:
        return None  # changed within the clock's granularity: not yet a trustworthy stamp
    return (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# The caches' entries are plain tuples (as the outside-env memo's): a cache entry
# is its key and what was made under it, read in one place.
_DotenvRead = tuple[
    tuple[FileSignature | None, FileSignature | None, dict[str, str]], Mapping[str, str]
]
"""A home's ``.env`` values cache entry: (what they were read under, the values)."""

_BuiltScope = tuple[
    Mapping[str, str], "tuple[tuple[SecretSource, dict[str, str]], ...]", Mapping[str, str], Scope
]
"""A home's scope cache entry: (the ``.env`` values, what each source fetched, the managed
values, the scope built from them)."""

_Residue = tuple[tuple[FileSignature, int], frozenset[str], Mapping[str, Origin]]
"""The residue cache entry: ((the launch ``.env`` signature, the load count), names, origins)."""


def _scope_fits(
    built: _BuiltScope,
    dotenv: Mapping[str, str],
    fetched: tuple[tuple[SecretSource, dict[str, str]], ...],
    managed: Mapping[str, str],
) -> bool:
    """The same ``.env`` values (``is``), equal managed and fetched values."""
    old_dotenv, old_fetched, old_managed, _ = built
    if old_dotenv is not dotenv or (old_managed is not managed and old_managed != managed):
        return False
    if len(old_fetched) != len(fetched):
        return False
    return all(a is c and b == d for (a, b), (c, d) in zip(old_fetched, fetched, strict=True))


def fetch_source(source: SecretSource, home: str) -> dict[str, str]:
    """What a secret source supplies for a home, checked by ``env_entries``: names and strings."""
    what = f"secret source {source.name!r}"
    return env_entries(source.fetch(home), what, config_entry_error(what))


class LaunchState:
    """The launch loads of one host and the names they make residue (thread-safe)."""

    def __init__(
        self,
        launch_home: str,
        environ: MutableMapping[str, str],
        managed_path: str | None,
        never_residue: Callable[[], frozenset[str]],
        *,
        maxsize: int = 256,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.launch_home = launch_home
        self.environ = environ
        self.managed_path = managed_path
        self._never_residue = never_residue  # global names + network trust (upper-cased)
        self.lock = threading.Lock()
        self.sources: list[SecretSource] = []
        self._unset_on_failure: set[int] = set()  # id() of the sources a failure leaves unset
        # id() of a source with a TTL -> (the TTL, home -> when its answer expires and the answer)
        self._fetches: dict[int, tuple[float, LRU[str, _Answer]]] = {}
        # (id of the source, home) -> its last failure left unset there, with the names it
        # left unset. By identity, not name: two sources may share a name, and one's
        # answer must not erase the other's failure.
        # bounded as the homes are: a failure pushed out loses its warning, never a value
        self._failures: LRU[tuple[int, str], tuple[SourceError, frozenset[str]]] = LRU(
            FAILURES_KEPT
        )
        self._dotenv_keys: set[str] = set()
        self._managed_keys: set[str] = set()
        self.managed_values: dict[str, str] | None = None
        # each managed key the launch load wrote: (the value written, the value it replaced)
        self._managed_applied: dict[str, tuple[str, str | None]] = {}
        self.launch_values: Mapping[str, str] = MappingProxyType({})
        self._residue_keep: frozenset[str] | None = None  # never-residue + managed keys
        self._applied: set[str] = set()
        self._applied_now: frozenset[str] = frozenset()  # the set as of the last load
        self._supplied: set[str] = set()
        self._clock = clock  # what file times are compared with (racy rule)
        self._loads = 0  # grows with every launch load: the residue cache's version
        self._dotenvs: LRU[str, _DotenvRead] = LRU(maxsize)
        self._scopes: LRU[str, _BuiltScope] = LRU(maxsize)
        self._residue: _Residue | None = None
        # the process env last read by ``scope`` and its global names' entries
        self._outside: tuple[dict[str, str], frozenset[str], dict[str, str]] | None = None

    def __repr__(self) -> str:
        return f"LaunchState(launch_home={self.launch_home!r})"

    @property
    def loaded(self) -> bool:
        """True once ``load()`` ran (the managed file's pins are in the process env)."""
        return self._loads > 0

    @property
    def dotenv_path(self) -> str:
        """The launch home's ``.env``."""
        return os.path.join(self.launch_home, ".env")

    def add_source(
        self, source: SecretSource, *, unset_on_failure: bool = False, ttl: float | None = None
    ) -> None:
        """Consult this source at the next launch load and in every routed scope.

        ``unset_on_failure``: a ``SourceError`` from it leaves its names unset (the
        failure is kept, see ``failures``) instead of stopping the load or the binding.
        ``ttl``: a routed scope reuses what the source answered for a home for that
        many seconds (``SOURCE_HOMES_KEPT`` homes at most); a launch load always fetches.
        """
        with self.lock:
            self.sources.append(source)
            if unset_on_failure:
                self._unset_on_failure.add(id(source))
            if ttl is not None:
                self._fetches[id(source)] = (ttl, LRU(SOURCE_HOMES_KEPT))

    def _cached_fetch(self, source: SecretSource, home: str) -> dict[str, str]:
        """What the source answered for ``home`` within its TTL, else a fetch (then kept).

        An answer is kept with the time it expires, ``ttl`` seconds after the fetch
        on ``_now``'s clock, and reused while ``_now()`` is before that time; the
        one bounded cache (``_lru.LRU``) keeps the ``SOURCE_HOMES_KEPT`` homes used last.
        """
        with self.lock:  # an LRU is not thread-safe: every access under the lock
            kept = self._fetches.get(id(source))
            hit = None if kept is None else kept[1].hit(home)
        if hit is not None and _now() < hit[0]:
            return hit[1]
        fetched = self._fetch(source, home)
        if kept is not None:
            ttl, answers = kept
            with self.lock:
                if (id(source), home) in self._failures:
                    return fetched  # a failure left unset is asked again, never kept
                answers.put(home, (_now() + ttl, fetched))
        return fetched

    def _fetch(self, source: SecretSource, home: str) -> dict[str, str]:
        """``fetch_source``, or nothing when the source failed and the host chose ``unset``."""
        try:
            fetched = fetch_source(source, home)
        except SourceError as err:
            with self.lock:
                keep_going = id(source) in self._unset_on_failure
                if keep_going:
                    self._failures.put((id(source), home), (err, declared_names_of(source, home)))
            if not keep_going:
                raise
            return {}
        with self.lock:
            self._failures.pop((id(source), home))
        return fetched

    def failures(self) -> tuple[SourceError, ...]:
        """The last failure of each source and home a failure left unset (no value in any)."""
        with self.lock:
            return tuple(err for err, _ in self._failures.values())

    def unset_warnings(self, home: str) -> list[BuildWarning]:
        """A traced build's warning per name a source failure left unset for ``home``.

        Kind ``source-unset``: the name is the source's (declared), its value is
        missing from the child because the source could not answer and the host
        chose ``on_failure="unset"``. A source that declares no names gets one
        warning with an empty key. The message is the ``SourceError``'s: no value.
        """
        from envscope.audit.trace import BuildWarning

        with self.lock:
            kept = [entry for (_, where), entry in self._failures.items() if where == home]
        warnings = []
        for err, names in kept:
            for name in sorted(names) or [""]:
                said = f"{name}: " if name else ""
                message = f"{said}left unset: {err}"
                warnings.append(BuildWarning(name, "source-unset", message))
        return warnings

    def managed_inputs(self) -> dict[str, str]:
        """What the managed file's ``${VAR}`` expands against: the env it is applied over.

        The process env, except that a key the managed file itself wrote (and
        that still holds what it wrote) reads as the value it replaced: so
        ``PATH=/opt/corp/bin:${PATH}`` expands once, however often it is read.
        """
        env = snapshot_env(self.environ, "environ")
        with self.lock:
            applied = list(self._managed_applied.items())
        for key, (written, replaced) in applied:
            if env.get(key) != written:
                continue  # changed since: the current value is what the file is applied over
            if replaced is None:
                del env[key]
            else:
                env[key] = replaced
        return env

    def read_managed(self) -> dict[str, str]:
        """(Re)read the managed file; its keys are never residue from now on.

        ``${VAR}`` expands as python-dotenv's ``override=True`` load does: the
        file's earlier values first, then the env it is applied over
        (``managed_inputs``).
        """
        if self.managed_path is None:
            return {}
        values = read_dotenv(
            self.managed_path, environ=self.managed_inputs(), override=True, missing_ok=False
        )
        with self.lock:
            self.managed_values = values
            self._managed_keys.update(values)
            self._residue_keep = self._never_residue() | {norm(k) for k in values}
        return values

    def managed(self) -> dict[str, str]:
        """The managed values, read on first use."""
        with self.lock:
            values = self.managed_values
        return self.read_managed() if values is None else values

    def load(self) -> None:
        """Load the launch ``.env`` (no override), secret sources, the managed file (override)."""
        environ = self.environ
        values = read_dotenv(self.dotenv_path, environ=snapshot_env(environ, "environ"))
        loaded = dict(values)
        with self.lock:
            self._dotenv_keys.update(values)
        for key, value in values.items():
            environ.setdefault(key, value)
        for source in list(self.sources):
            declared = declared_names_of(source, self.launch_home)  # the source's, fetched or not
            with self.lock:
                self._supplied.update(declared)
            fetched = self._fetch(source, self.launch_home)
            loaded.update(fetched)
            with self.lock:
                self._supplied.update(fetched)
            for key, value in fetched.items():
                if key in environ:
                    continue
                environ[key] = value
                with self.lock:
                    self._applied.add(key)
        for key, value in self.read_managed().items():
            previous = environ.get(key)
            with self.lock:
                record = self._managed_applied.get(key)
                # written before and untouched since: it still replaces the original value
                replaced = record[1] if record is not None and record[0] == previous else previous
                self._managed_applied[key] = (value, replaced)
            environ[key] = value
        with self.lock:
            self.launch_values = MappingProxyType({**self.launch_values, **loaded})
            self._applied_now = frozenset(self._applied)
            self._loads += 1

    def dotenv_keys(self) -> frozenset[str]:
        """Every key a non-managed dotenv load declared, for the process lifetime."""
        with self.lock:
            return frozenset(self._dotenv_keys)

    def managed_keys(self) -> frozenset[str]:
        """The keys of the administrator-managed dotenv file."""
        with self.lock:
            return frozenset(self._managed_keys)

    def applied_names(self) -> frozenset[str]:
        """Names a secret source put into the process env at launch (one object per load)."""
        return self._applied_now  # one read: a racing load hands the old set or the new

    def supplied_names(self) -> frozenset[str]:
        """Names a secret source supplied at launch, applied or skipped."""
        with self.lock:
            return frozenset(self._supplied)

    def keep(self) -> frozenset[str]:
        """Names never stripped as residue: global names, network trust, managed keys."""
        keep = self._residue_keep
        if keep is None:  # the managed file is not loaded (or none is configured)
            keep = self._residue_keep = self._never_residue()
        return keep

    def launch_signature(self) -> FileSignature | None:
        """The launch ``.env``'s signature now (``file_signature``; None: read it again).

        ``routed()`` takes it once for the home's scope and the residue.
        """
        return file_signature(self.dotenv_path, self._clock())

    def residue(self) -> tuple[frozenset[str], Mapping[str, Origin]]:
        """Upper-cased residue names with where each came from (the launch .env keys re-checked).

        The same objects while the launch ``.env``'s signature and the launch loads
        are the same (so a residue rule made from them still holds).
        """
        return self.residue_under(self.launch_signature())

    def residue_under(
        self, signature: FileSignature | None
    ) -> tuple[frozenset[str], Mapping[str, Origin]]:
        """``residue()`` with the launch ``.env``'s signature the caller took."""
        path = self.dotenv_path
        with self.lock:
            loads = self._loads  # the version before the sets are read
            cached = self._residue
        if cached is not None and signature is not None and cached[0] == (signature, loads):
            return cached[1], cached[2]
        current = read_dotenv(path, interpolate=False)
        origins: dict[str, Origin] = {}
        with self.lock:
            for name in self._supplied:
                origins[norm(name)] = Origin(OriginKind.SECRET_SOURCE, "launch secret source")
            for name in self._dotenv_keys | set(current):
                origins[norm(name)] = Origin(OriginKind.LAUNCH_DOTENV, "launch .env", path=path)
            names, view = frozenset(origins), MappingProxyType(origins)
            if signature is not None:
                self._residue = ((signature, loads), names, view)
        return names, view

    def _home_dotenv(
        self, home: str, outside: dict[str, str], launch_signature: FileSignature | None
    ) -> Mapping[str, str]:
        """A home's ``.env`` values, read again only when its signature (or an input) changed.

        ``launch_signature``: the launch ``.env``'s, as the caller took it.
        """
        dotenv_path = os.path.join(home, ".env")
        # The launch .env under another name (a symlink, a hard link, a bind mount)
        # is still the launch profile's: its keys are residue, never scope.
        launch_file = None if home == self.launch_home else self.dotenv_path
        own = file_signature(dotenv_path, self._clock())
        launch = None if launch_file is None else launch_signature
        trusted = own is not None and (launch_file is None or launch is not None)
        key = (own, launch, outside)
        if trusted:
            with self.lock:
                cached = self._dotenvs.hit(home)
            if cached is not None and cached[0] == key:
                return cached[1]
        values = MappingProxyType(
            read_dotenv(dotenv_path, environ=outside, override=True, unless_same_as=launch_file)
        )
        if trusted:
            with self.lock:
                self._dotenvs.put(home, (key, values))
        return values

    def _outside_env(self, global_names: frozenset[str]) -> dict[str, str]:
        """The process env's global names (any spelling): what a home's ``.env`` may expand.

        Taken again only when the process env or the names changed: an equal env
        passed the check when it was taken (``current_env``: the last snapshot
        itself while the env equals it, then ``check_env``).
        """
        last = self._outside
        environ = current_env(self.environ, None if last is None else last[0])
        if last is not None and last[1] is global_names and last[0] is environ:
            return last[2]
        check_env(environ, "environ")
        upper = str.upper  # ``norm``, without a Python call per key of the env
        outside = {k: v for k, v in environ.items() if upper(k) in global_names}
        self._outside = (environ, global_names, outside)  # one assignment: racing readers agree
        return outside

    def scope(
        self, home: str, global_names: frozenset[str], launch_signature: FileSignature | None
    ) -> Scope:
        """A home's scope: its ``.env``, its secret-source values, then the managed keys.

        ``launch_signature``: the launch ``.env``'s (``launch_signature()``), taken once
        by ``routed()`` for the scope and the residue.

        Each secret source is asked on every call, unless the host gave it a TTL
        (then what it answered for this home within the TTL is reused); the
        scope built from the same ``.env`` values, equal fetched values and the
        same managed values is the very same objects as last time.
        """
        outside = self._outside_env(global_names)
        dotenv = self._home_dotenv(home, outside, launch_signature)
        sources = list(self.sources)
        fetched = tuple((source, self._cached_fetch(source, home)) for source in sources)
        managed = self.managed()
        with self.lock:
            cached = self._scopes.hit(home)
        if cached is not None and _scope_fits(cached, dotenv, fetched, managed):
            return cached[3]
        dotenv_path = os.path.join(home, ".env")
        scope = dict(dotenv)
        origins = {norm(k): Origin(OriginKind.SCOPE, ".env", path=dotenv_path) for k in scope}
        names: set[str] = set()
        for source, values in fetched:
            scope.update(values)
            names.update(norm(n) for n in declared_names_of(source, home))
            for key in values:
                names.add(norm(key))
                origins[norm(key)] = Origin(
                    OriginKind.SECRET_SOURCE, source_detail(source, home, key)
                )
        for key, value in managed.items():
            scope[key] = value
            origins[norm(key)] = Origin(OriginKind.MANAGED, "managed", path=self.managed_path)
        built: Scope = (MappingProxyType(scope), MappingProxyType(origins), frozenset(names))
        with self.lock:
            self._scopes.put(home, (dotenv, fetched, managed, built))
        return built
