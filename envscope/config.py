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
surfaces:
  script: {inherit: core, include: ["CI_*"], exclude: ["*_DEBUG"], set: {PAGER: cat}}
```

Found via ``--config``, then ``$ENVSCOPE_CONFIG``, then ``./envscope.yaml``.
Errors are ``ConfigFileError`` naming the file and the field.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from envscope._declarations import Origin, OriginKind
from envscope.errors import ConfigFileError
from envscope.surfaces import Inherit, Surface, SurfacePolicy

if TYPE_CHECKING:
    import pydantic

    from envscope.host import Host

__all__ = ["CONFIG_ENV", "HostConfig", "find_config", "load_config"]

CONFIG_ENV = "ENVSCOPE_CONFIG"
CONFIG_NAME = "envscope.yaml"


@dataclass(frozen=True)
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

    def resolve_home(self, name_or_path: str | None) -> str:
        """A home named in ``homes``, else a path (relative to the working directory)."""
        if name_or_path is None:
            return self.launch_home
        if name_or_path in self.homes:
            return self.homes[name_or_path]
        return os.path.abspath(name_or_path)

    def home_name(self, path: str) -> str:
        """The config's name for a home path, else the path itself."""
        real = os.path.realpath(path)
        if real == os.path.realpath(self.launch_home):
            return "launch"
        for name, home in self.homes.items():
            if os.path.realpath(home) == real:
                return name
        return path

    def build_host(self, environ: MutableMapping[str, str] | None = None) -> Host:
        """A ``Host`` configured from this file (the launch env is not loaded yet)."""
        from envscope.catalog import Catalog
        from envscope.host import Host

        catalog = Catalog.default() if self.catalog is None else Catalog.from_file(self.catalog)
        return Host(
            self.launch_home,
            catalog=catalog,
            managed_env_file=self.managed_env_file,
            bundled_plugins=self.bundled_plugins,
            environ=environ,
            multiplex=self.multiplex,
            home_env_var=self.home_env_var,
            on_unreadable_platform=self.on_unreadable_platform,
            surface_policies={s.value: p for s, p in self.surfaces.items()},
            known_safe=self.known_safe,
        )


def find_config(explicit: str | None, environ: Mapping[str, str]) -> str | None:
    """``--config``, else ``$ENVSCOPE_CONFIG``, else ``./envscope.yaml`` when it exists."""
    if explicit:
        return explicit
    if environ.get(CONFIG_ENV):
        return environ[CONFIG_ENV]
    return CONFIG_NAME if os.path.exists(CONFIG_NAME) else None


@functools.cache
def _model() -> type[pydantic.BaseModel]:
    """The pydantic model of ``envscope.yaml`` (built on first use)."""
    from pydantic import BaseModel, ConfigDict, Field

    SurfaceName = Literal["terminal", "script", "worker", "credentialed", "mcp"]

    class _Strict(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    class SurfaceDoc(_Strict):
        inherit: Literal["all", "core", "none"] = "all"
        include: list[str] = Field(default_factory=list)
        exclude: list[str] = Field(default_factory=list)
        set: dict[str, str] = Field(default_factory=dict)

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

    return ConfigDoc


def load_config(path: str) -> HostConfig:
    """Read and validate ``envscope.yaml``; a ``ConfigFileError`` names the file and field."""
    import pydantic
    import yaml

    try:
        with open(path, "rb") as fh:
            data = fh.read(1024 * 1024 + 1)
    except OSError as exc:
        raise ConfigFileError(path, f"cannot read config: {exc.strerror}") from None
    try:
        doc: Any = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigFileError(
            path, "invalid YAML", line=None if mark is None else mark.line + 1
        ) from None
    try:
        parsed: Any = _model().model_validate(doc if doc is not None else {})
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise ConfigFileError(path, first["msg"], field=where) from None
    base = os.path.dirname(os.path.abspath(path))

    def rel(value: str | None) -> str | None:
        return None if value is None else os.path.normpath(os.path.join(base, value))

    surfaces = {
        Surface(name): SurfacePolicy(
            inherit=Inherit(doc_s.inherit),
            include=tuple(doc_s.include),
            exclude=tuple(doc_s.exclude),
            set_env=MappingProxyType(dict(doc_s.set)),
            origin=Origin(OriginKind.SURFACE, f"surfaces.{name}", path=path),
        )
        for name, doc_s in parsed.surfaces.items()
    }
    return HostConfig(
        path=path,
        launch_home=rel(parsed.launch_home) or base,
        homes={name: rel(p) or base for name, p in parsed.homes.items()},
        managed_env_file=rel(parsed.managed_env_file),
        bundled_plugins=rel(parsed.bundled_plugins),
        catalog=None if parsed.catalog == "default" else rel(parsed.catalog),
        home_env_var=parsed.home_env_var,
        multiplex=parsed.multiplex,
        on_unreadable_platform=parsed.on_unreadable_platform,
        surfaces=surfaces,
        known_safe=tuple(parsed.known_safe),
    )
