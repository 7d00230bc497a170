"""The runtime guard's rule: which values a spawn in one context may not carry (pure).

``GuardRule`` is built by ``Host.guard_rule()`` from what the host knows to
be secrets (the value-alias notion of ``_aliases``): values of declared
secret names in the process env, the launch loads, the managed values and
the routed scope. A spawn's env is offending when it holds

- a Tier 1 value of the bound home (or, routed, of the launch home),
- while routed, a launch-declared secret value (a routed child never gets
  the launch profile's credentials), unless it is the routed profile's own,
- when the env is inherited implicitly (``env=None``, ``os.system``), a
  Tier 2 value too, and any declared secret *name* (whatever its length),

under whatever name it appears. A value granted through ``grant=`` passes
under the block key it was granted to (the guard cannot tell one child from
another, so it passes under that key in any spawn of the process). An
env built by envscope holds none of these (the alias rule strips them), so
it passes, also after an SDK merged defaults into a copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envscope.pipeline._aliases import MIN_ALIAS_LENGTH, is_secret
from envscope.policy._declarations import Declaration, Tier, norm

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from envscope.policy._secret_policy import SecretPolicy

__all__ = ["GuardRule", "Offence"]


@dataclass(frozen=True, slots=True, repr=False)
class Offence:
    """One offending key of a spawn's env: the key and the secret whose value it holds."""

    key: str
    declaration: Declaration

    def __str__(self) -> str:
        name = self.declaration.name
        return self.key if norm(self.key) == name else f"{self.key} (the value of {name})"

    def __repr__(self) -> str:
        return f"Offence({self!s})"  # a key and a declared name, never a value


class GuardRule:
    """The secrets a spawn in one context may not carry (value → declaration)."""

    __slots__ = ("_always", "_granted", "_implicit", "_launch", "_own", "_policy")

    def __init__(
        self,
        policy: SecretPolicy,
        launch_policy: SecretPolicy | None,
        *,
        host_values: Iterable[Mapping[str, str]],
        scope: Mapping[str, str],
        own: Mapping[str, frozenset[str]],
        granted: frozenset[tuple[str, str]],
    ) -> None:
        self._policy = policy
        self._launch = launch_policy
        self._own = own
        self._granted = granted  # (upper key, value) pairs granted to an MCP server's block
        self._always: dict[str, Declaration] = {}  # forbidden in any env
        self._implicit: dict[str, Declaration] = {}  # forbidden in an inherited env
        for values in host_values:
            self._collect(values, scope=False)
        self._collect(scope, scope=True)

    def _forbidden(self, up: str, value: str, *, scope: bool) -> tuple[Declaration, bool] | None:
        """The declaration that forbids ``up=value``, and whether only implicitly."""
        decl = self._policy.declaration(up)
        launch = self._launch
        other = None
        if launch is not None and not scope and value not in self._own.get(up, ()):
            other = launch.declaration(up)
        found = None
        for d in (decl, other):
            if d is None or not is_secret(d):
                continue
            if d.tier is Tier.TIER1 or d is other:
                return d, False
            found = found or (d, True)
        return found

    def _collect(self, values: Mapping[str, str], *, scope: bool) -> None:
        for key, value in values.items():
            if len(value) < MIN_ALIAS_LENGTH or value in self._always:
                continue
            hit = self._forbidden(norm(key), value, scope=scope)
            if hit is not None:
                decl, implicit_only = hit
                if implicit_only:
                    self._implicit.setdefault(value, decl)
                else:
                    self._always[value] = decl
                    self._implicit.pop(value, None)

    def offences(self, env: Mapping[str, str], *, implicit: bool) -> list[Offence]:
        """The keys of ``env`` that carry a secret this spawn may not, sorted."""
        found: list[Offence] = []
        for key, value in env.items():
            decl = self._always.get(value)
            if decl is None and implicit:
                decl = self._implicit.get(value)
                if decl is None and value:
                    hit = self._forbidden(norm(key), value, scope=False)
                    decl = None if hit is None else hit[0]
            if decl is not None and (implicit or (norm(key), value) not in self._granted):
                found.append(Offence(key, decl))
        return sorted(found, key=lambda o: o.key)
