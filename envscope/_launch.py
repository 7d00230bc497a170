"""The host's launch state: what the launch profile put into the process.

``LaunchState`` loads the launch ``.env``, the secret sources and the
administrator-managed file into the process env, remembers which keys each
load declared (and their values: a host may pop a secret from ``os.environ``
afterwards, and the alias rule must still know it), and reads a routed home's
scope and the launch residue. It is part of the host layer: with ``Host`` the
only code that reads the file system and the process env for a build.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from envscope._inputs import snapshot_env, valid_name
from envscope.errors import ConfigurationError
from envscope.files._dotenv import read_dotenv
from envscope.policy._declarations import Origin, OriginKind, norm

if TYPE_CHECKING:
    from envscope.policy.sources import SecretSource

__all__ = ["LaunchState", "fetch_source"]


def fetch_source(source: SecretSource, home: str) -> dict[str, str]:
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


class LaunchState:
    """The launch loads of one host and the names they make residue (thread-safe)."""

    def __init__(
        self,
        launch_home: str,
        environ: MutableMapping[str, str],
        managed_path: str | None,
        never_residue: Callable[[], frozenset[str]],
    ) -> None:
        self.launch_home = launch_home
        self.environ = environ
        self.managed_path = managed_path
        self._never_residue = never_residue  # global names + network trust (upper-cased)
        self.lock = threading.Lock()
        self.sources: list[SecretSource] = []
        self._dotenv_keys: set[str] = set()
        self._managed_keys: set[str] = set()
        self.managed_values: dict[str, str] | None = None
        self.launch_values: Mapping[str, str] = MappingProxyType({})
        self._residue_keep: frozenset[str] | None = None  # never-residue + managed keys
        self._applied: set[str] = set()
        self._supplied: set[str] = set()

    def __repr__(self) -> str:
        return f"LaunchState(launch_home={self.launch_home!r})"

    @property
    def dotenv_path(self) -> str:
        """The launch home's ``.env``."""
        return os.path.join(self.launch_home, ".env")

    def add_source(self, source: SecretSource) -> None:
        """Consult this source at the next launch load and in every routed scope."""
        with self.lock:
            self.sources.append(source)

    def read_managed(self) -> dict[str, str]:
        """(Re)read the managed file; its keys are never residue from now on."""
        if self.managed_path is None:
            return {}
        values = read_dotenv(self.managed_path, override=True, missing_ok=False)
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
        values = read_dotenv(self.dotenv_path, environ=snapshot_env(environ))
        loaded = dict(values)
        with self.lock:
            self._dotenv_keys.update(values)
        for key, value in values.items():
            environ.setdefault(key, value)
        for source in list(self.sources):
            fetched = fetch_source(source, self.launch_home)
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
            environ[key] = value
        with self.lock:
            self.launch_values = MappingProxyType({**self.launch_values, **loaded})

    def dotenv_keys(self) -> frozenset[str]:
        """Every key a non-managed dotenv load declared, for the process lifetime."""
        with self.lock:
            return frozenset(self._dotenv_keys)

    def managed_keys(self) -> frozenset[str]:
        """The keys of the administrator-managed dotenv file."""
        with self.lock:
            return frozenset(self._managed_keys)

    def applied_names(self) -> frozenset[str]:
        """Names a secret source put into the process env at launch."""
        with self.lock:
            return frozenset(self._applied)

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

    def residue(self) -> tuple[frozenset[str], dict[str, Origin]]:
        """Upper-cased residue names with where each came from (re-reads the launch .env keys)."""
        path = self.dotenv_path
        current = read_dotenv(path, interpolate=False)
        origins: dict[str, Origin] = {}
        with self.lock:
            for name in self._supplied:
                origins[norm(name)] = Origin(OriginKind.SECRET_SOURCE, "launch secret source")
            for name in self._dotenv_keys | set(current):
                origins[norm(name)] = Origin(OriginKind.LAUNCH_DOTENV, "launch .env", path=path)
        return frozenset(origins), origins

    def scope(
        self, home: str, global_names: frozenset[str]
    ) -> tuple[dict[str, str], dict[str, Origin], frozenset[str]]:
        """A home's scope: its ``.env``, its secret-source values, then the managed keys."""
        dotenv_path = os.path.join(home, ".env")
        environ = snapshot_env(self.environ)
        outside = {k: v for k, v in environ.items() if norm(k) in global_names}
        # The launch .env under another name (a symlink, a hard link, a bind mount)
        # is still the launch profile's: its keys are residue, never scope.
        launch_file = None if home == self.launch_home else self.dotenv_path
        scope = read_dotenv(dotenv_path, environ=outside, override=True, unless_same_as=launch_file)
        origins = {norm(k): Origin(OriginKind.SCOPE, ".env", path=dotenv_path) for k in scope}
        names: set[str] = set()
        for source in list(self.sources):
            fetched = fetch_source(source, home)
            scope.update(fetched)
            for key in fetched:
                names.add(norm(key))
                origins[norm(key)] = Origin(OriginKind.SECRET_SOURCE, source.name)
        for key, value in self.managed().items():
            scope[key] = value
            origins[norm(key)] = Origin(OriginKind.MANAGED, "managed", path=self.managed_path)
        return scope, origins, frozenset(names)
