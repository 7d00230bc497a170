"""The value-alias rule (DESIGN.md §3): a secret's value never reaches a child under another name.

The rule is decided by *value*, after every filter, so no filter can hide
the original from it (the MCP allowlist, a surface policy, a passthrough
request, a host that popped the secret from ``os.environ``):

1. ``SecretValues`` collects every value the host knows to be a secret for
   this build: the values of declared secret names in the parent env, the
   process env, the launch loads, the managed values, the caller's ``extra``
   and a surface policy's ``set`` (the *host* domain), and in the routed
   scope (the *scope* domain).
2. ``strip_aliases`` removes every key of the finished child whose value is
   such a secret, unless the child legitimately holds that value under a
   declared name (a credentialed child's own provider key), or the key is
   exempt (a caller's forced hand-over, the pinned home variable).

A routed profile's *own* scope values are compared only against the scope's
own secrets, never against the launch profile's: otherwise a profile could
write guesses into its ``.env`` and learn which guess equals a launch secret
by watching which key vanishes from its own child. Its own values cannot be
launch leaks (scope interpolation never sees the launch env).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envscope.audit.trace import Action, Reason, Stage
from envscope.policy._declarations import Declaration, OriginKind, Tier, has_secret_suffix

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping

    from envscope.audit.trace import Trace

    Entries = dict[str, tuple[str, str]]
    Declare = Callable[[str], Declaration | None]

__all__ = ["MIN_ALIAS_LENGTH", "SecretValues", "is_secret", "strip_aliases"]

MIN_ALIAS_LENGTH = 8  # shorter values are too likely to collide by chance
_DECLARED_SECRET_KINDS = frozenset({OriginKind.MANIFEST, OriginKind.PARTIAL_SCAN})
_LOCATION_SUFFIXES = ("_URL", "_BASE", "_ENDPOINT", "_HOST")


def is_secret(decl: Declaration) -> bool:
    """True when a declared name holds a secret value (a key, a token), not a location.

    A secret-suffixed name, a name a manifest (or a partial scan) declares,
    or a Tier 1 name that is not a URL, host or endpoint.
    """
    if has_secret_suffix(decl.name) or decl.origin.kind in _DECLARED_SECRET_KINDS:
        return True
    return decl.tier is Tier.TIER1 and not decl.name.endswith(_LOCATION_SUFFIXES)


class SecretValues:
    """The secret values one build knows of, per domain (value → the declaration)."""

    __slots__ = ("host", "scope")

    def __init__(self) -> None:
        self.host: dict[str, Declaration] = {}
        self.scope: dict[str, Declaration] = {}

    def collect(
        self, items: Iterable[tuple[str, str]], declare: Declare, *, scope: bool = False
    ) -> None:
        """Remember the value of every declared secret name among ``items``."""
        found = self.scope if scope else self.host
        for key, value in items:
            if len(value) < MIN_ALIAS_LENGTH or value in found:
                continue
            decl = declare(key.upper())
            if decl is not None and is_secret(decl):
                found[value] = decl

    def __bool__(self) -> bool:
        return bool(self.host) or bool(self.scope)

    def __repr__(self) -> str:
        names = sorted({d.name for d in (*self.host.values(), *self.scope.values())})
        return f"SecretValues(names={names!r})"  # the secrets' names, never their values


def strip_aliases(
    out: Entries,
    secrets: SecretValues,
    *,
    declare: Declare,
    own: Mapping[str, frozenset[str]],
    exempt: Collection[str],
    granted: Collection[str] = (),
    trace: Trace | None = None,
) -> None:
    """Strip (in place) every key whose value is a secret this child may not receive.

    ``declare`` says whether an upper-cased name is declared: a value the
    child holds under a declared name it kept is its own to have. ``own``
    is the routed profile's own values (upper-cased name → its spellings' values): such a
    key is compared with the scope's secrets only. ``exempt`` names
    (upper-cased) are never stripped here. ``granted`` indexes of ``out``
    (an MCP server's env block) are
    kept by the operator's word, not by a rule: they never make a value the
    child's own, and a refusal says how to grant it.
    """
    if not secrets:
        return
    host, scope = secrets.host, secrets.scope
    held = {
        value
        for idx, (key, value) in out.items()
        if (value in host or value in scope)
        and idx not in granted
        and declare(key.upper()) is not None
    }
    for idx, (key, value) in list(out.items()):
        up = key.upper()
        if up in exempt or value in held:
            continue
        decl = scope.get(value)
        if decl is None and value not in own.get(up, ()):
            decl = host.get(value)
        if decl is None:
            continue
        if trace is not None:
            note = f"same value as {decl.name}"
            if idx in granted:
                note = f"the value is the host's {decl.name}; grant it to pass"
            reason = Reason.ALIAS_OF
            trace.record(
                key, Action.STRIPPED, Stage.SANITIZE, reason, decl.origin, note, value=value
            )
        del out[idx]
