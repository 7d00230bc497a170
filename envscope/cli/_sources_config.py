"""The ``sources:`` list of ``envscope.yaml``: secret sources a config-built host registers.

```yaml
sources:
  - type: 1password            # keyring | pass | age | 1password | bitwarden | vault | aws
    entries:                   # a home: "*" (every home), launch, a name of homes:, a path
      "*": {GH_TOKEN: "op://dev/github/token"}
      work: {WORK_KEY: "op://work/api/key"}
    on_failure: unset          # raise (default): a failure stops the load or the binding
    ttl: 300                   # seconds a routed binding reuses a home's answer
  - type: age
    identities: [~/.config/age/agent.txt]
    entries: {"*": {DB_PASSWORD: secrets.env.age}}
```

Each type takes the options of its class (``docs/sources.md``): ``keyring``
needs ``service``; ``age`` needs ``identities``; ``missing`` (keyring, age,
vault, aws), ``timeout`` (all but keyring), ``executable`` (the CLI sources,
age), ``approle_mount`` (vault), ``region`` and ``endpoint_url`` (aws) where
the class has them;
an option another type takes is an unknown key. ``SourceSpec`` is one checked
entry: its homes are resolved and its source was made once at load (a
``ConfigurationError`` there names the file, line and field), and ``make``
makes it again over the host's env, whose credentials its client reads.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Literal

from envscope.errors import ConfigFileError, ConfigurationError

if TYPE_CHECKING:
    from envscope.files._yaml import Document
    from envscope.policy.sources import SecretSource

__all__ = ["SOURCE_TYPES", "SourceSpec", "source_model", "source_specs"]

SOURCE_TYPES = ("keyring", "pass", "age", "1password", "bitwarden", "vault", "aws")
"""The ``type`` values ``sources:`` takes, each one source class."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One configured source: what to make, and how the host treats its failures."""

    type: str
    options: Mapping[str, Any]  # the class's keyword arguments, paths resolved
    entries: Mapping[str, Mapping[str, str]]  # home keys resolved to paths ("*" kept)
    on_failure: Literal["raise", "unset"] = "raise"
    ttl: float | None = None
    where: str = "sources"  # the item's field path, for errors
    line: int | None = dataclass_field(default=None, compare=False)

    def named_files(self) -> tuple[str, ...]:
        """The files this source runs or reads that the config names by path.

        An ``executable`` given as a path and age's identity files: a discovered
        config's must pass the trust rule, as its catalog does.
        """
        files = list(self.options.get("identities", ()))
        executable = self.options.get("executable")
        if isinstance(executable, str) and os.path.isabs(executable):
            files.append(executable)
        return tuple(files)

    def make(self, environ: Mapping[str, str] | None = None) -> SecretSource:
        """The source, its CLI reading credentials from ``environ`` (None: ``os.environ``)."""
        from envscope.policy import sources

        entries = {home: dict(names) for home, names in self.entries.items()}
        options = dict(self.options)
        if self.type == "keyring":
            return sources.KeyringSource(options.pop("service"), entries, **options)
        if self.type == "age":
            return sources.AgeFileSource(entries, **options)
        if self.type == "vault":
            return sources.VaultSource(entries, environ=environ, **options)
        if self.type == "aws":
            return sources.AwsSecretsSource(entries, environ=environ, **options)
        makers: dict[str, Callable[..., SecretSource]] = {
            "pass": sources.PassSource,
            "1password": sources.OnePasswordSource,
            "bitwarden": sources.BitwardenSource,
        }
        return makers[self.type](entries, environ=environ, **options)


def source_model() -> Any:
    """The pydantic type of one ``sources:`` item: a union told apart by ``type``."""
    from typing import Annotated

    from pydantic import AfterValidator, BaseModel, ConfigDict, Field

    from envscope.policy._source_entries import MAX_TIMEOUT_S, seconds_problem

    def seconds(most: float) -> AfterValidator:
        """The Python keyword's rule (``seconds_problem``), its error at the key's line."""

        def check(value: float) -> float:
            problem = seconds_problem(value, most=most)
            if problem is not None:
                raise ValueError(problem)
            return value

        return AfterValidator(check)

    # the bounds again for the generated JSON Schema (what an editor checks); the keyword's
    # rule decides (NaN too): tests/cli/test_seconds_rule.py holds the two seams together
    Ttl = Annotated[float, Field(gt=0), seconds(math.inf)]
    Timeout = Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S), seconds(MAX_TIMEOUT_S)]

    class _Source(BaseModel):
        model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
        name: str | None = Field(default=None, min_length=1)
        entries: dict[str, dict[str, str]]
        on_failure: Literal["raise", "unset"] = "raise"
        ttl: Ttl | None = None

    class _Cli(_Source):
        timeout: Timeout = 10.0
        executable: str | None = Field(default=None, min_length=1)

    class KeyringDoc(_Source):
        type: Literal["keyring"]
        service: str = Field(min_length=1)
        missing: Literal["raise", "unset"] = "raise"

    class PassDoc(_Cli):
        type: Literal["pass"]

    class AgeDoc(_Cli):
        type: Literal["age"]
        identities: list[str] | str
        missing: Literal["raise", "unset"] = "raise"

    class OnePasswordDoc(_Cli):
        type: Literal["1password"]

    class BitwardenDoc(_Cli):
        type: Literal["bitwarden"]

    class VaultDoc(_Source):
        type: Literal["vault"]
        timeout: Timeout = 10.0
        missing: Literal["raise", "unset"] = "raise"
        approle_mount: str = Field(default="approle", min_length=1)

    class AwsDoc(_Source):
        type: Literal["aws"]
        timeout: Timeout = 10.0
        missing: Literal["raise", "unset"] = "raise"
        region: str | None = Field(default=None, min_length=1)
        endpoint_url: str | None = Field(default=None, min_length=1)

    union = KeyringDoc | PassDoc | AgeDoc | OnePasswordDoc | BitwardenDoc | VaultDoc | AwsDoc
    return Annotated[union, Field(discriminator="type")]


def source_specs(
    items: list[Any],
    *,
    path: str,
    doc: Document,
    homes: Mapping[str, str],
    rel: Callable[[str | None, str], str | None],
) -> tuple[SourceSpec, ...]:
    """Each parsed ``sources:`` item as a ``SourceSpec``, made once to check it.

    ``homes`` maps ``launch`` and every configured home name to its path; any
    other home key is a path (``rel``: relative to the config) that must be an
    existing directory, so a misspelt home name is an error, never a source
    for no home.
    """
    specs = []
    for i, item in enumerate(items):
        where = f"sources[{i}]"
        line = doc.lines.get(("sources", i))
        entries: dict[str, dict[str, str]] = {}
        for key, names in item.entries.items():
            home = key if key == "*" else homes.get(key) or rel(key, f"{where}.entries.{key}")
            if home != "*" and (home is None or not os.path.isdir(home)):
                known = ", ".join(["*", *homes])
                raise ConfigFileError(
                    path,
                    f"{key!r} is neither a configured home ({known}) nor an existing directory",
                    field=f"{where}.entries.{key}",
                    line=doc.lines.get(("sources", i, "entries", key)) or line,
                )
            if str(home) in entries:  # launch and its path, or a name and its path
                raise ConfigFileError(
                    path,
                    f"{key!r} names a home another key of these entries already names",
                    field=f"{where}.entries.{key}",
                    line=doc.lines.get(("sources", i, "entries", key)) or line,
                )
            entries[str(home)] = dict(names)
        options = _options(item, where, rel)
        spec = SourceSpec(item.type, options, entries, item.on_failure, item.ttl, where, line)
        failure: ConfigFileError | None = None
        try:
            spec.make({})
        except ConfigurationError as exc:  # names the entry, never a value
            failure = ConfigFileError(path, str(exc), field=where, line=line)
        if failure is not None:
            raise failure
        specs.append(spec)
    return tuple(specs)


def _options(item: Any, where: str, rel: Callable[[str | None, str], str | None]) -> dict[str, Any]:
    """The class's keyword arguments from one item (a path resolved against the config)."""
    options: dict[str, Any] = {}
    if item.name is not None:
        options["name"] = item.name
    for key in ("service", "missing", "timeout", "approle_mount", "region", "endpoint_url"):
        if getattr(item, key, None) is not None:
            options[key] = getattr(item, key)
    executable = getattr(item, "executable", None)
    if executable is not None:
        options["executable"] = (
            rel(executable, f"{where}.executable") if "/" in executable else executable
        )
    if item.type == "age":
        named = [item.identities] if isinstance(item.identities, str) else item.identities
        options["identities"] = [rel(p, f"{where}.identities") for p in named]
    return options
