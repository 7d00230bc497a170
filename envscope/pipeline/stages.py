"""The stages of a build, each a pure function; stage 4 is in ``_sanitize``.

Stages work on ``Entries``: index → ``(key as spelled, value, layer)``, the
``Layer`` saying where the entry came from (``policy._layers``). The index is
the upper-cased key when names *fold* (Windows, where the OS compares names
case-insensitively: the output never holds two keys that differ only in
case), and the key itself when they do not (POSIX: undeclared case twins such
as ``http_proxy`` and ``HTTP_PROXY`` are two variables and both survive).
Every rule compares names upper-cased either way (``key.upper()``), so a
declared name is matched in any spelling, and a layer that sets a name (the
routed scope, managed keys, ``extra``, passthrough) replaces every spelling
of it. A stage returns a new mapping and never mutates its input. Each takes
an optional ``Trace``; without one it does no bookkeeping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envscope._inputs import valid_name
from envscope.audit.trace import NULL_TRACE, Action, Reason, Stage, Trace
from envscope.errors import EnvValueError
from envscope.pipeline._residue_rule import ResidueRule
from envscope.policy._declarations import Origin, OriginKind
from envscope.policy._layers import Layer
from envscope.policy._secret_policy import SecretPolicy

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

__all__ = [
    "FORCE_PREFIX",
    "MAX_VALUE_BYTES",
    "Entries",
    "Entry",
    "apply_managed",
    "at_cwd",
    "from_entries",
    "index",
    "is_forced",
    "overlay_scope",
    "put_layer",
    "remove_spellings",
    "spellings",
    "strip_residue",
    "to_entries",
    "validate_block",
    "without_refused",
]

FORCE_PREFIX = "_ENVSCOPE_FORCE_"
Entry = tuple[str, str, Layer]  # (key as spelled, value, the layer it came from)
Entries = dict[str, Entry]

MAX_VALUE_BYTES = 128 * 1024  # Linux MAX_ARG_STRLEN: one "KEY=value" string


def index(key: str, fold: bool) -> str:
    """The ``Entries`` index of a key: upper-cased when names fold, else the key itself."""
    return key.upper() if fold else key


def to_entries(
    env: Mapping[str, str],
    trace: Trace = NULL_TRACE,
    *,
    fold: bool,
    layer: Layer = Layer.BASE,
    layers: Mapping[str, Layer] | None = None,
) -> Entries:
    """Index a mapping as entries of ``layer``; of keys equal ignoring case, folding keeps one.

    ``layers`` gives some keys a layer of their own (the caller's grants and
    an MCP block's entries). Folding (Windows), the upper-case spelling wins
    when present, else the first seen; every dropped spelling is recorded
    (``case-duplicate``). Without folding (POSIX) every key is kept as spelled.
    """
    if not fold:
        if layers is None:
            return {key: (key, value, layer) for key, value in env.items()}
        return {key: (key, value, layers.get(key, layer)) for key, value in env.items()}
    out: Entries = {}
    for key, value in env.items():
        up = key.upper()
        prev = out.get(up)
        if prev is not None:
            keep_new = key == up and prev[0] != up
            dropped = prev[0] if keep_new else key
            reason = Reason.CASE_DUPLICATE
            dropped_value = prev[1] if keep_new else value
            trace.record(dropped, Action.STRIPPED, Stage.RESIDUE, reason, value=dropped_value)
            if not keep_new:
                continue
        out[up] = (key, value, layer if layers is None else layers.get(key, layer))
    return out


def spellings(entries: Entries, up: str, fold: bool) -> list[str]:
    """The indexes of ``entries`` whose key is ``up`` ignoring case (``up`` upper-cased)."""
    if fold:
        return [up] if up in entries else []
    return [idx for idx in entries if idx.upper() == up]


def remove_spellings(entries: Entries, ups: Collection[str], fold: bool) -> frozenset[str]:
    """Delete (in place) every key whose upper-cased name is in ``ups``; return the names hit."""
    if not ups:
        return frozenset()
    if fold:
        hit = [up for up in ups if up in entries]
    else:
        hit = [idx for idx in entries if idx.upper() in ups]
    for idx in hit:
        del entries[idx]
    return frozenset(idx.upper() for idx in hit)


def put_layer(
    entries: Entries,
    values: Mapping[str, str],
    fold: bool,
    record: Callable[[str, str, bool], None] | None = None,
    *,
    layer: Layer,
    layers: Mapping[str, Layer] | None = None,
) -> None:
    """Set (in place) every key of ``values`` as an entry of ``layer``, replacing every spelling.

    ``layers`` gives some keys a layer of their own. The layer's own case twins
    follow ``to_entries``: kept both on POSIX, one (upper case first) when names
    fold. ``record(key, value, replaced)`` is called per key set, ``replaced``
    telling whether the name was there.
    """
    new = to_entries(values, fold=fold, layer=layer, layers=layers)
    if fold:  # one spelling per name: set in place
        present = frozenset(idx for idx in new if idx in entries)
    else:  # every spelling goes, then the layer's own spellings follow in the layer's order
        present = remove_spellings(entries, {idx.upper() for idx in new}, fold)
    for idx, entry in new.items():
        if record is not None:
            record(entry[0], entry[1], entry[0].upper() in present)
        entries[idx] = entry


def from_entries(entries: Entries) -> dict[str, str]:
    """The plain env dict of some entries."""
    return {key: value for key, value, _ in entries.values()}


def strip_residue(
    entries: Entries,
    *,
    residue: frozenset[str] = frozenset(),
    keep: frozenset[str] = frozenset(),
    policies: Sequence[SecretPolicy] = (),
    residue_origins: Mapping[str, Origin] | None = None,
    trace: Trace = NULL_TRACE,
    rule: ResidueRule | None = None,
) -> Entries:
    """Stage 1: drop the launch profile's residue, credentials and authorization gates.

    ``residue`` and ``keep`` (global names, the network-trust family and
    managed keys) are upper-cased; every spelling of a name matches them.
    A name any of ``policies`` declares (Tier 1 or 2) is dropped too: a routed
    child gets its own profile's credentials from the scope, never the
    launch process's, ambient ones included. ``rule``, when given, stands for
    those four arguments (made from them, with its verdicts memoised).
    """
    if rule is None:
        rule = ResidueRule(residue, keep, policies, residue_origins)
    out: Entries = {}
    for idx, item in entries.items():
        verdict = rule.verdict(idx)
        if verdict is None:
            out[idx] = item
        else:
            reason, origin = verdict
            trace.record(item[0], Action.STRIPPED, Stage.RESIDUE, reason, origin, value=item[1])
    return out


def _overlay(
    entries: Entries,
    values: Mapping[str, str],
    stage: Stage,
    reason: Reason,
    origins: Mapping[str, Origin] | None,
    default_origin: Origin,
    trace: Trace,
    fold: bool,
    layer: Layer,
) -> Entries:
    out = dict(entries)

    def record(key: str, value: str, replaced: bool) -> None:
        # the same key and value already there (an unrouted build's managed entry): kept
        same = entries.get(index(key, fold), (None, None))[:2] == (key, value)
        action = (Action.KEPT if same else Action.OVERRIDDEN) if replaced else Action.ADDED
        origin = default_origin if origins is None else origins.get(key.upper(), default_origin)
        trace.record(key, action, stage, reason, origin, value=value)

    put_layer(out, values, fold, record, layer=layer)
    return out


def overlay_scope(
    entries: Entries,
    scope: Mapping[str, str],
    *,
    origins: Mapping[str, Origin] | None = None,
    home: str = "",
    trace: Trace = NULL_TRACE,
    refuse: Callable[[str], bool] | None = None,
    fold: bool,
) -> Entries:
    """Stage 2: the routed home's scope replaces values (every spelling of each name).

    ``refuse`` names (upper-cased) the scope may not introduce: injection
    vectors the host did not allow. They are refused and recorded.
    """
    origin = Origin(OriginKind.SCOPE, home or "routed scope")
    if refuse is not None:
        scope = without_refused(scope, refuse, Stage.OVERLAY, trace)
    reason = Reason.SCOPE_VALUE
    return _overlay(
        entries, scope, Stage.OVERLAY, reason, origins, origin, trace, fold, Layer.SCOPE
    )


def apply_managed(
    entries: Entries,
    managed: Mapping[str, str],
    *,
    path: str | None = None,
    trace: Trace = NULL_TRACE,
    fold: bool,
) -> Entries:
    """Stage 3: administrator-managed values beat the routed profile's own (every spelling)."""
    origin = Origin(OriginKind.MANAGED, "managed env file", path=path)
    reason = Reason.MANAGED_VALUE
    return _overlay(
        entries, managed, Stage.MANAGED, reason, None, origin, trace, fold, Layer.MANAGED
    )


def is_forced(up: str) -> bool:
    """True for an upper-cased name that carries the force prefix."""
    return up.startswith(FORCE_PREFIX)


def without_refused(
    values: Mapping[str, str], refuse: Callable[[str], bool], stage: Stage, trace: Trace
) -> Mapping[str, str]:
    """``values`` without the keys ``refuse`` names (each refusal recorded)."""
    bad = [
        k
        for k in values
        if refuse(k[len(FORCE_PREFIX) :].upper() if is_forced(k.upper()) else k.upper())
    ]
    if not bad:
        return values
    for key in bad:
        trace.record(key, Action.REFUSED, stage, Reason.INJECTION_VECTOR, value=values[key])
    return {k: v for k, v in values.items() if k not in bad}


def _utf8_len(text: str) -> int:
    """UTF-8 size; a lone surrogate (no valid encoding) raises ``UnicodeEncodeError``."""
    return len(text.encode("utf-8", "surrogateescape")) if not text.isascii() else len(text)


def block_bytes(env: dict[str, str]) -> int | None:
    """The env block's size in bytes when every entry can pass as it is (None: look closer).

    The common case in a few C-level passes: every name valid, no value with a
    NUL or a lone surrogate, no entry over ``MAX_VALUE_BYTES``. Each entry
    counts its ``=`` and terminating NUL. ``validate_block`` checks entry by
    entry where this says None.
    """
    count = len(env)
    if not count:
        return 0
    keys = "=".join(env)
    values = "=".join(env.values())
    if "" in env or keys.count("=") != count - 1 or "\x00" in keys or "\x00" in values:
        return None
    try:
        # the joins hold count - 1 separators each; an entry adds "=" and a NUL
        total = _utf8_len(keys) + _utf8_len(values) + 2
    except UnicodeEncodeError:
        return None
    if total <= MAX_VALUE_BYTES:
        return total
    # no entry can be over the limit when even 4 bytes per character would fit
    if 4 * (max(map(len, env)) + max(map(len, env.values()))) + 2 <= MAX_VALUE_BYTES:
        return total
    return None


def entry_bytes(key: str, value: str) -> int | None:
    """One entry's share of the block, ``"=".join`` and NUL counted (None: it cannot pass as is).

    ``key`` is a name the block already carried (valid). None for a value with
    a NUL or a lone surrogate, or an entry over ``MAX_VALUE_BYTES``: the block
    is then checked entry by entry (``validate_block``).
    """
    if "\x00" in value:
        return None
    if key.isascii() and value.isascii():  # the common case: a character is a byte
        size = len(key) + len(value) + 2
    else:
        try:
            size = _utf8_len(key) + _utf8_len(value) + 2
        except UnicodeEncodeError:
            return None
    return size if size <= MAX_VALUE_BYTES else None


def validate_block(
    env: dict[str, str], *, max_total_bytes: int, trace: Trace = NULL_TRACE
) -> dict[str, str]:
    """The finished env, checked to fit a child: valid names, no entry over 128 KiB, a cap.

    An entry whose name holds ``=`` or NUL (or is empty), or whose value holds
    NUL, cannot be passed to ``execve``: it is dropped (from a copy) and recorded. An entry
    over ``MAX_VALUE_BYTES`` or a block over ``max_total_bytes`` is an
    ``EnvValueError`` naming the key (the largest one for the block), never a
    silent ``E2BIG`` at spawn time.
    """
    total = block_bytes(env)
    if total is not None and total <= max_total_bytes:
        return env
    env = dict(env)  # a stage never mutates its input
    total = 0
    largest = ("", -1)
    for key, value in list(env.items()):
        if not valid_name(key) or "\x00" in value:
            reason = Reason.INVALID_NAME
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason, value=value)
            del env[key]
            continue
        try:
            size = _utf8_len(key) + _utf8_len(value) + 2  # "=" and the terminating NUL
        except UnicodeEncodeError:  # a lone surrogate: execve cannot carry it
            reason = Reason.INVALID_NAME
            trace.record(key, Action.STRIPPED, Stage.SANITIZE, reason)
            del env[key]
            continue
        if size > MAX_VALUE_BYTES:
            raise EnvValueError(
                key, f"entry is {size} bytes, over the {MAX_VALUE_BYTES}-byte limit"
            )
        total += size
        if size > largest[1]:
            largest = (key, size)
    if total > max_total_bytes:
        raise EnvValueError(
            largest[0],
            f"the env block is {total} bytes, over the {max_total_bytes}-byte limit "
            f"(largest entry: {largest[1]} bytes)",
        )
    return env


_SPAWN_ORIGIN = Origin(OriginKind.CALLER, "cwd=")


def at_cwd(env: dict[str, str], cwd: object, trace: Trace = NULL_TRACE) -> dict[str, str]:
    """``env`` told where the child runs: ``PWD`` is ``cwd`` (absolute), when ``env`` has one.

    A built env inherits the launcher's ``PWD`` (a global name); a child started
    in another directory (``cwd=``) that trusts ``$PWD`` (a shell, Node, ``git``
    wrappers) would work in the launcher's directory instead. ``PWD`` is set to
    the directory the spawn changes to, as a shell's ``cd`` does (the logical
    path: symlinks kept); an env without ``PWD`` (an allowlist surface) stays
    without. ``cwd`` is what ``subprocess`` accepts (a path, bytes, a path-like)
    or None (nothing changes). Changes ``env`` in place and returns it.
    """
    if cwd is None or "PWD" not in env:
        return env
    import os

    here = os.path.abspath(os.fsdecode(os.fspath(cwd)))  # type: ignore[call-overload]
    env["PWD"] = here
    trace.record("PWD", Action.OVERRIDDEN, Stage.EXTRA, Reason.SPAWN_CWD, _SPAWN_ORIGIN, value=here)
    return env
