"""``decide``: the one function that decides whether an entry reaches a child.

An entry is ``(key, value, layer)``; the build's ``SecretRule`` knows what is
declared and which values are secrets for this child. ``decide`` asks it, in
one order, and answers with a ``Verdict`` (or None when there is nothing to
say: an undeclared name holding no secret):

1. the child's own home passes: a ``HOME_VAR`` entry, or the home variable
   naming the context's home (``SecretRule.is_home``: a home path that
   happens to hold a declared value is still the child's home);
2. the name: declared Tier 1 always, Tier 2 unless credentials are inherited
   (under routing, the launch process's own value too) is withheld, unless the
   entry's layer names it: a grant (``GRANT``), an MCP server's block
   (``MCP_LITERAL``, ``MCP_OWN``, ``MCP_REFERENCE``), a forced hand-over (``FORCED``, checked
   when it was unwrapped); ``SPAWN`` (an env the host's code handed to a spawn)
   has its names checked by the factory already. An undeclared name, with the
   host's ``name_context`` on, is a Tier 2 credential when its name says
   credential and its value looks like one (``SecretRule.name_context_of``),
   except where a grant, a block or a forced hand-over names the entry;
3. the value: it is withheld when it is or holds any secret value this child
   may not receive, or a credential format, that no exemption covers: each
   secret in it is checked (``SecretRule.secret_in`` finds every one), so a
   second secret never rides beside one an exemption keeps. The exemptions: a
   grant (never a secret source's credential: that is an error), the
   operator's literal (a format typed into a block, never a value the host
   resolved), a forced hand-over of a Tier 2 credential, ``known_safe``, a
   credentialed child's own provider key as the whole value, the managed
   file's own entry (``MANAGED``: a launch credential equal to it is not its
   origin), or a host that keeps copies (``strip_value_aliases=False``). The verdict names the
   strictest secret left uncovered, or (kept) the strictest one and what kept
   it; an MCP block entry whose name the block grants stays ``server-grant``,
   with what kept its value in the note.

Every exemption is named in the verdict and traced. The factory's stage 4, the
runtime guard, ``envscope.testing`` and the CLI's masking ask ``decide`` (stage
4 through ``decide_all``, one pass over a build's values), and so does the MCP
config loader for a server's command, arguments and cwd (``ARGV``: decided by
value alone, no exemption covers a secret on a command line); none of them
re-assembles the order above.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import eq
from typing import TYPE_CHECKING, cast

from envscope.errors import PassthroughRefusedError
from envscope.pipeline._secret_values import Exemption, Grade, SecretMatch, strictest
from envscope.policy._declarations import Declaration, Origin, OriginKind, Tier
from envscope.policy._layers import BLOCK_LAYERS, LITERAL_LAYERS, Layer
from envscope.policy._reasons import Reason

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from envscope.pipeline._memo import CleanValues
    from envscope.pipeline.secret_rule import SecretRule

__all__ = [
    "CALLER_ORIGIN",
    "Exemption",
    "RuleVerdicts",
    "Verdict",
    "decide",
    "decide_all",
    "describe",
    "held_as_secret",
    "is_own",
]

CALLER_ORIGIN = Origin(OriginKind.CALLER, "extra")  # where a caller's extra comes from

_EXEMPTION_REASONS = {
    Exemption.GRANT: Reason.GRANTED,
    Exemption.SERVER_BLOCK: Reason.SERVER_GRANT,
    Exemption.OPERATOR_LITERAL: Reason.OPERATOR_LITERAL,
    Exemption.KNOWN_SAFE: Reason.KNOWN_SAFE,
    Exemption.PROVIDER_KEY: Reason.PROVIDER_KEY,
    Exemption.FORCED: Reason.FORCED,
    Exemption.TIER2_INHERITED: Reason.TIER2_INHERITED,
    Exemption.VALUES_KEPT: Reason.VALUES_KEPT,
    Exemption.MANAGED: Reason.MANAGED_VALUE,
}
_CALLER_EXEMPTIONS = frozenset(
    {Exemption.GRANT, Exemption.SERVER_BLOCK, Exemption.OPERATOR_LITERAL, Exemption.FORCED}
)


@dataclass(frozen=True, slots=True, repr=False)
class Verdict:
    """What ``decide`` found in an entry and what it decided.

    ``withheld``: the entry does not reach the child. ``declaration`` is the
    name's declaration when the name decided, ``match`` the secret the value is
    or holds (set also when an exemption kept it), ``exemption`` what kept it.
    ``reason``, ``origin`` and ``note`` are the trace's record of it.
    """

    withheld: bool
    reason: Reason
    origin: Origin | None
    note: str | None = None
    declaration: Declaration | None = None
    match: SecretMatch | None = None
    exemption: Exemption | None = None

    @property
    def secret(self) -> bool:
        """True when the entry holds a secret, whether or not an exemption kept it."""
        return self.withheld or self.match is not None

    def __repr__(self) -> str:
        exempt = None if self.exemption is None else self.exemption.value
        reason = self.reason.value
        return f"Verdict(withheld={self.withheld}, reason={reason!r}, exemption={exempt!r})"


def _exempt(exemption: Exemption, origin: Origin | None, **found: object) -> Verdict:
    origin = CALLER_ORIGIN if exemption in _CALLER_EXEMPTIONS else origin
    return Verdict(False, _EXEMPTION_REASONS[exemption], origin, exemption=exemption, **found)  # type: ignore[arg-type]


def is_own(rule: SecretRule, key: str, value: str, layer: Layer) -> bool:
    """True when the entry is the routed profile's own: its layer says so, never its value.

    A ``SCOPE`` entry is (the routed home's ``.env`` and sources; a passthrough
    name keeps its source's layer), and so is ``MCP_OWN``: a value the routed
    profile typed into its own MCP config (a file in its home). An env the
    host's code handed to a spawn (``SPAWN``) carries no layer: the binding's
    record of the profile's own values answers (``SecretRule.is_own``). Every
    other layer is the host's
    (the process env, the managed file, the caller's ``extra`` and MCP block).
    An own entry answers to the target's policy and its own secrets only, so a
    routed profile never learns whether a value equals a launch secret (no oracle).
    """
    if not rule.routed:
        return False
    if layer in _OWN_LAYERS:
        return True
    return layer is Layer.SPAWN and rule.is_own(key, value)


_OWN_LAYERS = frozenset({Layer.SCOPE, Layer.MCP_OWN})  # a routed build's entries of these are


def _by_name(rule: SecretRule, key: str, value: str, layer: Layer, own: bool) -> Verdict | None:
    """Step 2: the name's verdict (None: the name says nothing).

    A name no policy declares may be a credential by its name and value
    (``_name_context``), decided like a declared Tier 2 name from there on.
    """
    if layer is Layer.SPAWN or layer is Layer.ARGV or rule.is_plain_name(key):
        return None  # a plain name: undeclared in every policy, no credential token
    decl = rule.declaration(key, own=own)
    if decl is None:
        if not rule.name_context:  # the switch read inline: a build without it pays no call
            return None
        decl = _name_context(rule, key, value, layer)
        if decl is None:
            return None
        if rule.is_known_safe(key):
            return _exempt(Exemption.KNOWN_SAFE, decl.origin, declaration=decl)
    elif layer is Layer.GRANT:
        return _exempt(Exemption.GRANT, None, declaration=decl)
    elif layer in BLOCK_LAYERS:
        return _exempt(Exemption.SERVER_BLOCK, None, declaration=decl)
    elif layer is Layer.FORCED:
        return _exempt(Exemption.FORCED, None, declaration=decl)
    if not rule.withholds(decl, value, own=own):
        return _exempt(Exemption.TIER2_INHERITED, decl.origin, declaration=decl)
    if decl.origin.kind is OriginKind.NAME_CONTEXT:
        note = f"name-context: {decl.origin.detail}"
        return Verdict(True, Reason.NAME_CONTEXT, decl.origin, note, declaration=decl)
    reason = Reason.TIER1 if decl.tier is Tier.TIER1 else Reason.TIER2
    return Verdict(True, reason, decl.origin, declaration=decl)


def _name_context(rule: SecretRule, key: str, value: str, layer: Layer) -> Declaration | None:
    """An undeclared name's Tier 2 declaration by its name and value, or None.

    Only where nobody named the entry: a grant, the server's block and a forced
    hand-over are explicit (their value is still decided, step 3).
    """
    if layer is Layer.GRANT or layer is Layer.FORCED:
        return None
    return None if layer in BLOCK_LAYERS else rule.name_context_of(key, value)


def _covering(rule: SecretRule, layer: Layer, match: SecretMatch) -> Exemption | None:
    """The exemption that keeps this one secret of an entry of ``layer``, or None."""
    if layer is Layer.ARGV:
        return None  # a command line is readable by every local user: nothing covers it
    if match.exemption is not None:
        return match.exemption
    if match.launch and layer is Layer.MANAGED:  # the entry's origin is the administrator
        return Exemption.MANAGED
    if match.shape and layer in LITERAL_LAYERS:
        return Exemption.OPERATOR_LITERAL
    if layer is Layer.FORCED and rule.forced_keeps(match):
        return Exemption.FORCED
    if not rule.strip_values:
        return Exemption.VALUES_KEPT
    return None


def _by_value(
    rule: SecretRule,
    key: str,
    layer: Layer,
    matches: Sequence[SecretMatch],
    named: Verdict | None,
) -> Verdict:
    """Step 3: the verdict on a value that is or holds each of ``matches``."""
    decl = None if named is None else named.declaration
    if layer is Layer.GRANT:
        source = [m for m in matches if m.grade is Grade.SOURCE]
        if source:
            raise PassthroughRefusedError(
                key,
                f"grant refused: the value holds {rule.public(source[0])}, a secret source's "
                "credential (never grantable, under any key)",
            )
        return _exempt(Exemption.GRANT, None, declaration=decl, match=strictest(matches))
    uncovered = [m for m in matches if _covering(rule, layer, m) is None]
    if not uncovered:
        match = strictest(matches)
        exemption = _covering(rule, layer, match)
        assert exemption is not None  # every match is covered
        return _exempt(exemption, match.origin, declaration=decl, match=match)
    match = strictest(uncovered)
    if match.shape:
        note = f"holds a {match.name} credential"
        return Verdict(True, Reason.VALUE_SHAPE, match.origin, note, decl, match)
    # the trace is the host's: it names the secret, never its value
    note = f"{'same value as' if match.whole else 'holds the value of'} {match.name}"
    if layer in BLOCK_LAYERS:
        verb = "is" if match.whole else "holds"
        note = f"the value {verb} the host's {match.name}; grant it to pass"
    return Verdict(True, Reason.ALIAS_OF, match.origin, note, decl, match)


def _decided(
    rule: SecretRule,
    key: str,
    value: str,
    layer: Layer,
    matches: Sequence[SecretMatch],
    own: bool,
) -> Verdict | None:
    named = _by_name(rule, key, value, layer, own)
    if named is not None and named.withheld:
        return named
    if not matches:
        return named
    valued = _by_value(rule, key, layer, matches, named)
    if named is None or valued.withheld or named.exemption is not Exemption.SERVER_BLOCK:
        return valued
    # the operator's block names it and its value passes too: the block is the verdict
    # (server-grant), what kept the value is in the note
    note = f"its value: {valued.reason.value}"
    return Verdict(
        False, named.reason, named.origin, note, named.declaration, valued.match, named.exemption
    )


def decide(
    rule: SecretRule, key: str, value: str, layer: Layer, *, own: bool | None = None
) -> Verdict | None:
    """The verdict on one entry ``key=value`` of ``layer`` for the child ``rule`` is for.

    None when there is nothing to say (an undeclared name holding no secret).
    A grant of a value holding a secret source's credential raises
    ``PassthroughRefusedError``. ``own`` says whether the entry is the routed
    profile's own where its layer cannot (None: ``is_own`` from the layer).
    """
    if layer is Layer.HOME_VAR or rule.is_home(key, value):
        return None  # the child's own home
    own = is_own(rule, key, value, layer) if own is None else own and rule.routed
    return _decided(rule, key, value, layer, rule.secret_in(key, value, own=own), own)


_LastEnv = tuple[Layer, dict[str, str], list[tuple[str, str, "Verdict"]]]
"""The last env ``RuleVerdicts.withheld`` answered: its layer, a copy of it, the answer."""


class RuleVerdicts:
    """A context's rule with its verdicts remembered: what the runtime guard asks per spawn.

    ``decide`` is a pure function of the rule and the entry, so an entry seen
    before in this context is answered by one lookup. At most ``limit``
    verdicts per layer are kept (``MAX``); more and the table starts over. A rule is kept (with
    this table) by its memo owner while the context's inputs stay the same
    (``build.context_rule``).
    """

    MAX = 512  # per layer: a child env or two, with churn (a per-spawn task id)

    __slots__ = ("_by_layer", "_last", "_limit", "rule")

    def __init__(self, rule: SecretRule, limit: int = MAX) -> None:
        self.rule = rule
        self._limit = limit
        self._by_layer: dict[Layer, dict[tuple[str, str], Verdict | None]] = {}
        self._last: _LastEnv | None = None

    def withheld(self, env: Mapping[str, str], layer: Layer) -> list[tuple[str, str, Verdict]]:
        """Each entry of ``env`` (of ``layer``) the rule withholds, with its verdict, in order.

        The answer for the last env asked is kept: the same env again (a host
        spawns one child env many times) costs one comparison.
        """
        last = self._last
        if (
            last is not None
            and last[0] is layer
            and last[1] == env
            and all(map(eq, last[1], env))  # in order: the same pairs in another order differ
        ):
            return last[2]
        seen = dict(env)  # decided and remembered as one: a live env may change meanwhile
        verdict_of = self.deciding(layer)
        found = []
        for key, value in seen.items():
            verdict = verdict_of(key, value)
            if verdict is not None and verdict.withheld:
                found.append((key, value, verdict))
        self._last = (layer, seen, found)  # one attribute: replaced whole
        return found

    def deciding(self, layer: Layer) -> Callable[[str, str], Verdict | None]:
        """``decide(self.rule, key, value, layer)`` for entries of ``layer``, remembered."""
        rule, limit = self.rule, self._limit
        verdicts = self._by_layer.setdefault(layer, {})

        def verdict(key: str, value: str) -> Verdict | None:
            pair = (key, value)
            if pair in verdicts:
                return verdicts[pair]
            found = decide(rule, key, value, layer)
            if len(verdicts) >= limit:
                verdicts.clear()
            verdicts[pair] = found
            return found

        return verdict

    def __repr__(self) -> str:
        counts = sum(map(len, self._by_layer.values()))
        return f"RuleVerdicts({counts} verdicts)"  # never a value


def held_as_secret(rule: SecretRule, key: str, value: str) -> bool:
    """True when the host holds ``key=value`` as a secret: the auditor's view.

    The entry is decided as the host's own (``Layer.BASE``), withheld or kept by
    an exemption alike: what ``explain --show-values`` masks and what a host's
    redactor masks (``envscope.redact.for_host``).
    """
    verdict = decide(rule, key, value, Layer.BASE)
    return verdict is not None and verdict.secret


Known = dict[tuple[str, str, Layer], "Verdict | None"]
"""A rule's verdicts by entry (key, value, layer: a tuple hashed in C, the layer by
identity), kept while the rule is reused."""

KNOWN_KEPT = 4096  # entries per rule: a few builds' envs; more and the table starts over
_UNKNOWN = object()  # no verdict known (None is one: nothing to say)


def decide_all(
    rule: SecretRule,
    entries: Sequence[tuple[str, str, Layer]],
    clean: CleanValues | None = None,
    known: Known | None = None,
) -> list[Verdict | None]:
    """``decide`` for each entry, in order, with one search of the values for the lot.

    ``clean``: the build's view of its memo owner's values known clean of
    credential formats (``SecretRule.find_in``), or None. ``known``: the
    verdicts this very rule gave before (a rule a full build reuses,
    ``_delta.reusable_rule``): an entry found there is not decided again, the
    others are decided (every value searched: the owner's clean set is left
    as the last full search made it) and added.
    """
    if known is None:
        return _decide_all(rule, entries, clean)
    found: list[object] = [known.get(entry, _UNKNOWN) for entry in entries]
    todo = [i for i, verdict in enumerate(found) if verdict is _UNKNOWN]
    if todo:
        fresh = _decide_all(rule, [entries[i] for i in todo])
        if len(known) + len(todo) > KNOWN_KEPT:
            known.clear()
        for i, verdict in zip(todo, fresh, strict=True):
            found[i] = known[entries[i]] = verdict
    return cast("list[Verdict | None]", found)


def known_of(decided: Sequence[tuple[tuple[str, str, Layer], Verdict | None]]) -> Known:
    """The verdicts a build gave, as ``decide_all``'s ``known`` (its rule's, for its next build)."""
    return dict(decided[:KNOWN_KEPT])  # C-level: each entry is its own key


def _decide_all(
    rule: SecretRule,
    entries: Sequence[tuple[str, str, Layer]],
    clean: CleanValues | None = None,
) -> list[Verdict | None]:
    """Each entry decided: one search of the values for the lot (``find_in``), then ``_decided``."""
    if rule.routed:  # ``is_own`` for each entry, inlined (one pass over a build's entries)
        own_layers, spawn = _OWN_LAYERS, Layer.SPAWN
        owns = [
            layer in own_layers or (layer is spawn and rule.is_own(key, value))
            for key, value, layer in entries
        ]
    else:
        owns = [False] * len(entries)
    matches = rule.find_in([(key, value) for key, value, _ in entries], owns, clean)
    return [
        None
        if layer is Layer.HOME_VAR or rule.is_home(key, value)
        else _decided(rule, key, value, layer, match, own)
        for (key, value, layer), match, own in zip(entries, matches, owns, strict=True)
    ]


def describe(rule: SecretRule, key: str, verdict: Verdict) -> str:
    """How an error, an assertion or a log line names a withheld entry (never a value).

    ``KEY (Tier 1)`` or ``KEY (Tier 2, child does not inherit credentials)`` for a
    name, ``KEY (the value of NAME)``, ``KEY (holds a FORMAT credential)`` … for a
    value (``SecretRule.describe``: a routed build never names a launch secret).
    """
    if verdict.match is not None:
        return rule.describe(key, verdict.match)
    decl = verdict.declaration
    if decl is None:
        return key
    if decl.origin.kind is OriginKind.NAME_CONTEXT:
        return f"{key} (a credential by its name and value: {decl.origin.detail})"
    if decl.tier is Tier.TIER1:
        return f"{key} (Tier 1)"
    if rule.inherit_credentials:
        return f"{key} (a launch credential; a routed child gets its own profile's)"
    return f"{key} (Tier 2, child does not inherit credentials)"
