"""What one build reads: the host's ``HostOptions`` and the per-call ``BuildRequest``.

Every field of a ``BuildRequest`` says how the build memo compares it
(``Role``, in the field's metadata): part of the build's *shape* (hashable, the
memo's slot), *keyed* (the caller's ``extra``: its keys in the shape, its
values compared by equality, so a new value per build replaces the slot's
child instead of adding a slot; on the ``mcp`` surface its items are the
shape, each server's block its own slot), the *same* object (immutable once
made: a policy, the launch loads), an *equal* mapping (the parent env, the
names a source supplied), the memo's *owner* (the routed binding whose memo
it is), or *derived* from other fields. ``memo_key`` is made from those
roles alone, and a test fails when a field has none, so a new input can
never be left out of the key (a stale child env).
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from envscope._inputs import check_env
from envscope.policy._declarations import norm
from envscope.policy.surfaces import Surface

if TYPE_CHECKING:
    from envscope.pipeline._binding import Binding
    from envscope.pipeline._memo import MemoKey
    from envscope.policy._declarations import Origin
    from envscope.policy._secret_policy import SecretPolicy
    from envscope.policy.catalog import Catalog
    from envscope.policy.surfaces import SurfacePolicy

__all__ = [
    "EXTRAS_AT",
    "PROCESS_AT",
    "SNAPSHOT_AT",
    "BuildRequest",
    "HostOptions",
    "Role",
    "check_parent_envs",
    "memo_key",
    "undiffed_differ",
]


class Role(enum.Enum):
    """How the build memo compares one field of a ``BuildRequest``."""

    SHAPE = "shape"  # hashable, part of the memo slot
    KEYED = "keyed"  # a mapping: its keys in the slot (mcp: its items), compared by value
    SAME = "same"  # compared by identity: immutable once made
    EQUAL = "equal"  # compared by value
    OWNER = "owner"  # the memo lives in it (a routed binding's home share)
    DERIVED = "derived"  # follows from the other fields


SHAPE: Mapping[str, object] = MappingProxyType({"memo": Role.SHAPE})
KEYED: Mapping[str, object] = MappingProxyType({"memo": Role.KEYED})
SAME: Mapping[str, object] = MappingProxyType({"memo": Role.SAME})
EQUAL: Mapping[str, object] = MappingProxyType({"memo": Role.EQUAL})
OWNER: Mapping[str, object] = MappingProxyType({"memo": Role.OWNER})
DERIVED: Mapping[str, object] = MappingProxyType({"memo": Role.DERIVED})


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class HostOptions:
    """A host's checked keywords (``_host_options.host_options``), nothing read from disk.

    One object per host: a build reads it through its request, and the memo
    compares it by identity.
    """

    home_env_var: str
    managed_path: str | None
    bundled_root: str | None
    global_names_given: frozenset[str] | None  # upper-cased; None: the catalog's + home_env_var
    change_notification: bool
    on_unreadable_platform: Literal["raise", "deny"]
    fold: bool  # Windows: names fold, the child holds one spelling per name
    surface_policies: Mapping[Surface, SurfacePolicy]
    strip_value_aliases: bool
    max_env_bytes: int
    allow_injection: frozenset[str]  # upper-cased names a build may introduce after all
    known_safe: frozenset[str]  # upper-cased: no "looks like a credential" warning
    mcp_network_trust: bool  # the proxy/CA family reaches MCP children
    refuse_redirecting: bool  # the redirecting family (PATH, HOME, indexes, proxies) too
    drop_refused_extra: bool = False  # a declared name in extra: dropped and traced, not raised
    name_context: bool = True  # an undeclared credential name with a credential's value: Tier 2

    def global_names(self, catalog: Catalog) -> frozenset[str]:
        """Upper-cased names never stripped as launch residue, under ``catalog``."""
        given = self.global_names_given
        return catalog.global_names | {norm(self.home_env_var)} if given is None else given

    def refuses(self, upper_key: str, catalog: Catalog) -> bool:
        """True when a build may not introduce this name (scope, extra, passthrough, source).

        An injection vector (matched stripped: ``"  LD_PRELOAD"`` is one), and with
        ``refuse_redirecting`` a name of the redirecting family, unless the host
        allows that exact name.
        """
        if upper_key in self.allow_injection:
            return False
        return catalog.is_injection_vector(upper_key) or (
            self.refuse_redirecting and catalog.is_redirecting(upper_key)
        )

    def __repr__(self) -> str:
        return f"HostOptions(home_env_var={self.home_env_var!r}, fold={self.fold})"


@dataclass(slots=True, repr=False, eq=False)
class BuildRequest:
    """Everything one build reads (holds values: its repr shows none).

    Made by the host on every spawn and only read after that; not frozen, as a
    frozen record's ``__init__`` sets each of its 23 fields through
    ``object.__setattr__`` (about 2 µs, an eighth of a warm build back to back).
    ``tests/pipeline/test_request.py`` pins that no build rebinds a field.
    """

    options: HostOptions = field(metadata=SAME)
    catalog: Catalog = field(metadata=SAME)  # the catalog in force (a new one: a new object)
    global_names: frozenset[str] = field(metadata=SAME)  # ``options.global_names(catalog)``
    surface: Surface = field(metadata=SHAPE)
    inherit_credentials: bool = field(metadata=SHAPE)
    strip_launch_profile: bool = field(metadata=SHAPE)
    passthrough: tuple[str, ...] = field(metadata=SHAPE)
    extras: dict[str, str] = field(metadata=KEYED)  # each MCP block: its own slot
    granted: frozenset[str] = field(metadata=SHAPE)  # exact spellings of extra keys given as is
    resolved: frozenset[str] = field(metadata=SHAPE)  # MCP block keys the host resolved
    own: frozenset[str] = field(metadata=SHAPE)  # MCP block keys the routed profile typed
    snapshot: dict[str, str] = field(metadata=EQUAL)  # the base env (the process env by default)
    process: dict[str, str] | None = field(
        metadata=EQUAL
    )  # the process env, when a base was passed
    supplied: frozenset[str] | None = field(metadata=EQUAL)  # names sources supplied (allowlist)
    applied: frozenset[str] = field(metadata=EQUAL)  # names the launch's sources put into the env
    binding: Binding | None = field(metadata=OWNER)
    target: str = field(metadata=DERIVED)  # the bound home, else the launch home
    routed: bool = field(metadata=DERIVED)  # the binding's, else the host's multiplex
    policy: SecretPolicy = field(metadata=SAME)
    launch_policy: SecretPolicy | None = field(metadata=SAME)  # routed: the launch home's
    managed: Mapping[str, str] = field(metadata=SAME)
    keep: frozenset[str] = field(metadata=SAME)  # never residue: global, network trust, managed
    launch_values: Mapping[str, str] = field(metadata=SAME)
    ungrantable: frozenset[str] = field(metadata=SAME)  # upper-cased: sources' credentials
    # unbound multiplex only (no binding holds it): the launch residue, read per build
    launch_residue: tuple[frozenset[str], Mapping[str, Origin]] | None = field(metadata=EQUAL)

    def refuses(self, upper_key: str) -> bool:
        """True when this build may not introduce the name (``HostOptions.refuses``)."""
        return self.options.refuses(upper_key, self.catalog)

    @property
    def process_env(self) -> dict[str, str]:
        """The process env (the base itself unless the caller passed another)."""
        return self.snapshot if self.process is None else self.process

    def __repr__(self) -> str:
        return f"BuildRequest(target={self.target!r}, surface={self.surface.value!r})"


def check_parent_envs(snapshot: dict[str, str], process: dict[str, str] | None) -> None:
    """The parent envs a build starts from hold only strings a child env can carry.

    Checked when a build runs, not when the host copies them: a memo hit
    hands back the child of an equal env, which this check passed.
    """
    check_env(snapshot, "environ" if process is None else "base")
    if process is not None:
        check_env(process, "environ")


_ROLES: tuple[tuple[str, Role], ...] = tuple(
    (f.name, f.metadata["memo"]) for f in fields(BuildRequest)
)
_SHAPE = tuple(name for name, role in _ROLES if role in (Role.SHAPE, Role.KEYED))
_EQUAL = tuple(name for name, role in _ROLES if role in (Role.EQUAL, Role.KEYED))
# Read with one C-level attrgetter per role: the key is made on every spawn.
_SHAPE_OF = operator.attrgetter(*_SHAPE)
_SAME_OF = operator.attrgetter(*(name for name, role in _ROLES if role is Role.SAME))
_EQUAL_OF = operator.attrgetter(*_EQUAL)
_KEYED = frozenset(name for name, role in _ROLES if role is Role.KEYED)
_SHAPE_MAPPINGS = tuple(i for i, name in enumerate(_SHAPE) if name in _KEYED)
# where the shape holds a keyed mapping (the caller's extra): its keys, or on mcp its items


def memo_key(request: BuildRequest, *, traced: bool) -> MemoKey:
    """Where this build sits in its owner's memo, from the fields' roles alone.

    ``(shape, same, equal)``: the shape fields, each keyed mapping by its keys
    (on the ``mcp`` surface by its items), and whether the build is traced (a
    traced build keeps its decisions too); the same-object fields; the equal
    fields and the keyed mappings. Owner and derived fields are not in it. An
    untraced build's shape is its incremental slot too (``_delta``: an ``mcp``
    build takes none).
    """
    shape = list(_SHAPE_OF(request))
    items = request.surface is Surface.MCP
    for i in _SHAPE_MAPPINGS:
        mapping = shape[i]
        shape[i] = tuple(mapping.items()) if items else tuple(mapping)
    shape.append(traced)
    return tuple(shape), _SAME_OF(request), _EQUAL_OF(request)


_UNDIFFED = tuple(
    i for i, name in enumerate(_EQUAL) if name not in ("snapshot", "process", *_KEYED)
)
_UNDIFFED_OF = operator.itemgetter(*_UNDIFFED)  # one C-level call (two fields or more)
SNAPSHOT_AT, PROCESS_AT, EXTRAS_AT = (_EQUAL.index(n) for n in ("snapshot", "process", "extras"))
# where the parent envs and ``extra`` sit in the equal fields (``BuildMemo.lookup``'s ``differs``)


def undiffed_differ(differs: Sequence[bool]) -> bool:
    """True when an equal field other than the parent envs and ``extra`` (diffed) differs."""
    return True in _UNDIFFED_OF(differs)


def roles() -> Sequence[tuple[str, Role]]:
    """Each ``BuildRequest`` field with its role (the test that pins the key reads it)."""
    return _ROLES
