"""The host config file, ``envscope.yaml``, for the command line and for hosts.

```yaml
launch_home: ./launch            # paths are relative to this file
homes: {work: ./profiles/work, personal: ./profiles/personal}
managed_env_file: ./managed.env
bundled_plugins: ./bundled
catalog: default                 # or a path to a catalog YAML (extends nothing)
home_env_var: ENVSCOPE_HOME
multiplex: false
on_unreadable_platform: raise    # or deny
known_safe: [DEPLOY_WEBHOOK_SECRET]  # names kept knowingly: no name-shape warning
mcp_network_trust: true          # proxies and CA bundles reach MCP children (false: not)
change_notification: true        # Linux: inotify in front of the manifest stamp (false: stamp)
mcp_families: [desktop, ssh-agent]  # capabilities MCP children get: DISPLAY…, SSH_AUTH_SOCK
refuse_redirecting: false        # true: extra/scopes may not set PATH, HOME, indexes, proxies…
drop_refused_extra: false        # true: a declared name in extra is dropped (traced), not an error
name_context: true               # false: an undeclared credential name + value passes (warned only)
surfaces:
  script: {inherit: core, include: ["CI_*"], exclude: ["*_DEBUG"], set: {PAGER: cat}}
  terminal: {default_excludes: true}  # Codex's *KEY* *SECRET* *TOKEN* excludes
sources:                         # secret sources the host registers (cli/_sources_config.py)
  - {type: pass, entries: {"*": {GH_TOKEN: dev/github}}, on_failure: unset, ttl: 300}
```

Found via ``--config``, then ``$ENVSCOPE_CONFIG``, then ``./envscope.yaml``.
An explicit file is the user's choice; a discovered one must pass the trust
rule (``_trusted_file``), as must the catalog and managed file it names. Every
file is read without blocking, with the manifest reader's limits (size, depth,
duplicate keys naming both lines). Errors are ``ConfigFileError`` naming the
file, the line and the field; none carries a value or a parser's exception.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from envscope._inputs import text_path
from envscope.cli._sources_config import SOURCE_TYPES, SourceSpec, source_model, source_specs
from envscope.errors import ConfigFileError, ConfigurationError, EnvValueError
from envscope.files._trusted_file import check_trusted, read_file
from envscope.policy._declarations import Origin, OriginKind
from envscope.policy.surfaces import Inherit, Surface, SurfacePolicy

if TYPE_CHECKING:
    import pydantic

    from envscope.files._yaml import Document
    from envscope.host import Host

__all__ = [
    "CONFIG_ENV",
    "MAX_CONFIG_BYTES",
    "ConfigChoice",
    "HostConfig",
    "find_config",
    "load_config",
]

CONFIG_ENV = "ENVSCOPE_CONFIG"
CONFIG_NAME = "envscope.yaml"
MAX_CONFIG_BYTES = 256 * 1024
"""The largest config or catalog file read (the manifest limit; larger is refused, not cut)."""


@dataclass(frozen=True, slots=True)
class HostConfig:
    """A validated host config; paths are absolute (resolved against the file's directory)."""

    path: str
    launch_home: str
    homes: Mapping[str, str] = field(default_factory=dict)
    managed_env_file: str | None = None
    bundled_plugins: str | None = None
    catalog: str | None = None  # None = the default catalog
    home_env_var: str = "ENVSCOPE_HOME"
    multiplex: bool = False
    on_unreadable_platform: Literal["raise", "deny"] = "raise"
    surfaces: Mapping[Surface, SurfacePolicy] = field(default_factory=dict)
    known_safe: tuple[str, ...] = ()
    mcp_network_trust: bool = True
    change_notification: bool = True
    mcp_families: tuple[str, ...] = ()
    refuse_redirecting: bool = False
    drop_refused_extra: bool = False
    name_context: bool = True
    sources: tuple[SourceSpec, ...] = ()

    def resolve_home(self, name_or_path: str | None) -> str:
        """A home named in ``homes`` (or ``launch``), else an existing directory.

        Anything else is a ``ConfigurationError`` naming the configured homes
        and the directory tried: never a routed build of a nonexistent path.
        """
        if name_or_path is None:
            return _configured_home(self.path, "launch_home", self.launch_home)
        if name_or_path in self.homes:
            return _configured_home(self.path, f"homes.{name_or_path}", self.homes[name_or_path])
        if name_or_path == "launch":  # the name home_name() reports for the launch home
            return _configured_home(self.path, "launch_home", self.launch_home)
        path = os.path.abspath(name_or_path)
        if not os.path.isdir(path):
            names = ", ".join(["launch", *sorted(self.homes)])
            raise ConfigurationError(
                f"home {name_or_path!r} is neither a home of {self.path} ({names}) "
                f"nor an existing directory ({path})"
            )
        return path

    def home_name(self, path: str) -> str:
        """The config's name for a home path, else the path itself."""
        real = os.path.realpath(path)
        if real == os.path.realpath(self.launch_home):
            return "launch"
        for name, home in self.homes.items():
            if os.path.realpath(home) == real:
                return name
        return path

    def build_host(
        self, environ: MutableMapping[str, str] | None = None, *, sources: bool = True
    ) -> Host:
        """A ``Host`` configured from this file (the launch env is not loaded yet).

        Its ``sources`` are registered in order, each reading its client's
        credentials from ``environ`` (the host's env); ``sources=False`` leaves
        them out (``envscope sources check`` asks each one itself).
        """
        from envscope.host import Host
        from envscope.policy.catalog import Catalog

        catalog = Catalog.default() if self.catalog is None else Catalog.from_file(self.catalog)
        host = Host(
            _configured_home(self.path, "launch_home", self.launch_home),
            catalog=catalog,
            managed_env_file=self.managed_env_file,
            bundled_plugins=self.bundled_plugins,
            environ=environ,
            multiplex=self.multiplex,
            home_env_var=self.home_env_var,
            on_unreadable_platform=self.on_unreadable_platform,
            surface_policies={s.value: p for s, p in self.surfaces.items()},
            known_safe=self.known_safe,
            mcp_network_trust=self.mcp_network_trust,
            change_notification=self.change_notification,
            mcp_families=self.mcp_families,
            refuse_redirecting=self.refuse_redirecting,
            drop_refused_extra=self.drop_refused_extra,
            name_context=self.name_context,
        )
        for spec in self.sources if sources else ():
            host.add_secret_source(spec.make(environ), on_failure=spec.on_failure, ttl=spec.ttl)
        return host


def _configured_home(config_path: str, field_name: str, path: str) -> str:
    """A home the config names, when it is an existing directory; else a ``ConfigFileError``.

    A configured home that does not exist is the same mistake as ``--home``
    naming one: never a routed build with an empty scope.
    """
    if not os.path.isdir(path):
        message = f"names a home that is not an existing directory ({path})"
        raise ConfigFileError(config_path, message, field=field_name)
    return path


@dataclass(frozen=True, slots=True)
class ConfigChoice:
    """The config's path, and whether it was named (``--config``, ``$ENVSCOPE_CONFIG``)."""

    path: str
    explicit: bool


def find_config(explicit: str | None, environ: Mapping[str, str]) -> ConfigChoice | None:
    """``--config``, else ``$ENVSCOPE_CONFIG``, else ``./envscope.yaml`` when it exists.

    An empty ``--config`` or a set-but-empty ``$ENVSCOPE_CONFIG`` (an unset
    shell variable expanded) is a ``ConfigFileError``, never discovery.
    """
    if explicit is not None:
        if not explicit:
            raise ConfigFileError("--config", "is empty (an unset variable?); name a config file")
        return ConfigChoice(explicit, explicit=True)
    if CONFIG_ENV in environ:
        value = environ[CONFIG_ENV]
        if not value:
            raise ConfigFileError(
                f"${CONFIG_ENV}", "is set but empty; name a config file or unset it"
            )
        return ConfigChoice(value, explicit=True)
    if os.path.lexists(CONFIG_NAME):
        return ConfigChoice(os.path.abspath(CONFIG_NAME), explicit=False)
    return None


@functools.cache
def _model() -> type[pydantic.BaseModel]:
    """The pydantic model of ``envscope.yaml`` (built on first use)."""
    from pydantic import BaseModel, ConfigDict, Field

    SurfaceName = Literal["terminal", "script", "worker", "credentialed", "mcp"]
    SourceItem = source_model()

    class _Strict(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    class SurfaceDoc(_Strict):
        inherit: Literal["all", "core", "none"] | None = None  # None: not said
        include: list[str] = Field(default_factory=list)
        exclude: list[str] = Field(default_factory=list)
        set: dict[str, str] = Field(default_factory=dict)
        default_excludes: bool = False

    class ConfigDoc(_Strict):
        launch_home: str
        homes: dict[str, str] = Field(default_factory=dict)
        managed_env_file: str | None = None
        bundled_plugins: str | None = None
        catalog: str = "default"
        home_env_var: str = Field(default="ENVSCOPE_HOME", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
        multiplex: bool = False
        on_unreadable_platform: Literal["raise", "deny"] = "raise"
        surfaces: dict[SurfaceName, SurfaceDoc] = Field(default_factory=dict)
        known_safe: list[str] = Field(default_factory=list)
        mcp_network_trust: bool = True
        change_notification: bool = True
        mcp_families: list[Literal["desktop", "ssh-agent"]] = Field(default_factory=list)
        refuse_redirecting: bool = False
        drop_refused_extra: bool = False
        name_context: bool = True
        sources: list[SourceItem] = Field(default_factory=list)  # type: ignore[valid-type]

    return ConfigDoc


def _surface_policy(path: str, doc: Document, name: str, doc_s: Any) -> SurfacePolicy:
    """One surface's policy; what ``SurfacePolicy`` refuses names this file, line and field."""
    try:
        return SurfacePolicy(
            inherit=None if doc_s.inherit is None else Inherit(doc_s.inherit),
            include=tuple(doc_s.include),
            exclude=tuple(doc_s.exclude),
            set_env=MappingProxyType(dict(doc_s.set)),
            origin=Origin(OriginKind.SURFACE, f"surfaces.{name}", path=path),
            default_excludes=doc_s.default_excludes,
        )
    except EnvValueError as exc:  # a set value: its key is the field
        where: tuple[str, ...] = ("surfaces", name, "set", exc.key)
        message = exc.reason
    except ConfigurationError as exc:  # "include: item 0 ..." names the field itself
        field_name, _, message = str(exc).partition(": ")
        where = ("surfaces", name, field_name)
    raise ConfigFileError(
        path, message, field=".".join(where), line=doc.lines.get(where) or doc.lines.get(where[:2])
    )


def _untagged(err: Any) -> tuple[tuple[int | str, ...], str]:
    """Pydantic's location and message, without the ``type`` tag it puts inside a source's."""
    loc = tuple(err["loc"])
    if loc[:1] == ("sources",) and len(loc) > 3 and loc[2] in SOURCE_TYPES:
        loc = loc[:2] + loc[3:]
    return loc, err["msg"]


def load_config(path: str, *, trusted: bool = True) -> HostConfig:
    """Read and validate ``envscope.yaml``; a ``ConfigFileError`` names the file and field.

    ``trusted=False`` (a discovered file) applies the trust rule to the file,
    its directory and every file it names (catalog, managed file) first.
    """
    import pydantic

    from envscope.files._yaml import read_document, validation_error

    if not trusted:
        check_trusted(path, ConfigFileError, "config")
    data = read_file(path, max_bytes=MAX_CONFIG_BYTES, error=ConfigFileError, what="config")
    doc = read_document(
        data, path, error=ConfigFileError, kind="config", max_bytes=MAX_CONFIG_BYTES
    )
    try:
        parsed: Any = _model().model_validate(doc.root if doc.root is not None else {})
    except pydantic.ValidationError as exc:  # its errors hold the input values: keep none
        failure: ConfigFileError | None = validation_error(
            exc, doc, path, ConfigFileError, describe=_untagged
        )
    else:
        failure = None
    if failure is not None:
        raise failure
    base = os.path.dirname(os.path.abspath(path))

    def rel(value: str | None, key: str) -> str | None:
        """A path the config names: ``~`` expanded, else relative to the config's directory.

        A NUL in it, or a ``~`` that cannot be expanded (no ``HOME``, no such
        user), is an error naming the file, line and field.
        """
        if value is None:
            return None
        where = tuple(key.split("."))
        try:
            named = text_path(value or ".", "the path")
        except ConfigurationError as exc:
            raise ConfigFileError(path, str(exc), field=key, line=doc.lines.get(where)) from None
        expanded = os.path.expanduser(named)
        if expanded.startswith("~"):
            user = named.split("/", 1)[0].split(os.sep, 1)[0]
            raise ConfigFileError(
                path,
                f"cannot expand {user} (HOME is not set, or no such user): write the path out",
                field=key,
                line=doc.lines.get(where),
            )
        return os.path.normpath(os.path.join(base, expanded))

    surfaces = {
        Surface(name): _surface_policy(path, doc, name, doc_s)
        for name, doc_s in parsed.surfaces.items()
    }
    launch_home = rel(parsed.launch_home, "launch_home") or base
    homes = {name: rel(p, f"homes.{name}") or base for name, p in parsed.homes.items()}
    config = HostConfig(
        path=path,
        launch_home=launch_home,
        homes=homes,
        managed_env_file=rel(parsed.managed_env_file, "managed_env_file"),
        bundled_plugins=rel(parsed.bundled_plugins, "bundled_plugins"),
        catalog=None if parsed.catalog == "default" else rel(parsed.catalog, "catalog"),
        home_env_var=parsed.home_env_var,
        multiplex=parsed.multiplex,
        on_unreadable_platform=parsed.on_unreadable_platform,
        surfaces=surfaces,
        known_safe=tuple(parsed.known_safe),
        mcp_network_trust=parsed.mcp_network_trust,
        change_notification=parsed.change_notification,
        mcp_families=tuple(parsed.mcp_families),
        refuse_redirecting=parsed.refuse_redirecting,
        drop_refused_extra=parsed.drop_refused_extra,
        name_context=parsed.name_context,
        sources=source_specs(
            parsed.sources, path=path, doc=doc, homes={"launch": launch_home, **homes}, rel=rel
        ),
    )
    if not trusted:
        for named, what in ((config.catalog, "catalog"), (config.managed_env_file, "managed file")):
            if named is not None:
                check_trusted(named, ConfigFileError, f"{what} named by {path}")
        for spec in config.sources:
            for named in spec.named_files():
                check_trusted(named, ConfigFileError, f"source file named by {path}")
    return config
