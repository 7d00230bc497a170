"""``SecretRule``: what is declared for this child, and which values are secrets it
may not receive; ``decision.decide`` decides each entry on it (one rule, one place).

One rule is made per build context (the bound home, routed or not, the surface's
credential inheritance) from the policies the build consults (the target's and,
under routing, the launch home's) and the values the host knows. The factory
(stages 1 and 4), the runtime guard, the MCP config loader and grant check, the
CLI's masking and ``envscope.testing`` all ask it (through ``decision.decide``
where an entry is decided); none of them keeps its own copy of either answer.

**Names.** ``declaration(name, value)`` is the stricter declaration of the
target's and (routed) the launch home's policy; a routed profile's own value
answers to the target's policy only (the launch home's plugin secret is not the
routed profile's). ``withholds(decl, value)`` says whether this child may not
receive a name so declared: Tier 1 always, Tier 2 unless credentials are inherited.

**Values.** A *secret value* is the value (8 characters or more) of any name a
policy of the build declares, whatever its suffix or shape, that this child may
not receive:

- in the *host* domain (the process env, the base, the launch loads, the managed
  values, the caller's ``extra`` outside an MCP block, a surface policy's
  ``set``): Tier 1 always; Tier 2 unless credentials are inherited; under
  routing, every declared value the launch process holds (a routed child never
  gets the launch profile's credentials, ambient ones included), the managed
  values excepted;
- in the *scope* domain (the routed profile's scope): by the target's policy.

``secret_in(key, value)`` says whether a value *is* or *contains* such a secret
(a URL's userinfo or path, ``Bearer …``, quotes, whitespace, a list): whole
first, then inside. A routed profile's own value is compared only with the
scope's secrets, so a profile cannot learn which of its guesses equals a launch
secret (no oracle). Values are compared as consumers read them: trimmed of
surrounding whitespace and line ends, the 8-character floor on the trimmed
value. Else, a value of a credential format (``policy.formats``) is a secret for
every child; a match the rule keeps itself carries its ``Exemption``: a
``known_safe`` name and, for a child that inherits credentials, a model
provider's key under a catalog name of that provider as the whole value
(``shape``). Each secret has a ``Grade`` that says what may still hand it over:
a grant (``HOST``), also the force prefix (``CREDENTIAL``), or nothing
(``SOURCE``: a secret source's credential).
``find_in`` answers ``secret_in`` for a build's values in one pass; given the
build's view of its memo owner's ``CleanValues`` (``_memo``), the format table
searches only the values the owner's last build did not find clean. The view
is the build's, not the rule's: one rule serves many builds.

``public(match)`` is what an error or a log line may say about a match: the
secret's name, unless the rule is routed and the secret is the launch profile's
(a routed profile's owner can read the errors of its own spawns). The trace is
the host's and its auditor's: it names the secret's key, never its value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envscope.pipeline._secret_values import (
    MIN_SECRET_LENGTH,
    Exemption,
    Grade,
    SecretMatch,
    Secrets,
    Span,
    as_read,
    covered,
    formats_in,
    stricter_declaration,
    tier_grade,
)
from envscope.policy._declarations import Declaration, Origin, OriginKind, Tier
from envscope.policy._name_context import credential_tokens, name_context

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envscope.pipeline._memo import CleanValues
    from envscope.policy._secret_policy import SecretPolicy
    from envscope.policy.formats import FormatTable

__all__ = [
    "MIN_SECRET_LENGTH",
    "Grade",
    "SecretMatch",
    "SecretRule",
    "stricter_declaration",
]

NAMES_KEPT = 4096
"""How many names a rule remembers (its declarations, which are plain), then starts over."""


class SecretRule:
    """The secret rule of one build context (see the module docstring)."""

    __slots__ = (
        "_declared",
        "_formats",
        "_home",
        "_host",
        "_known_safe",
        "_launch_pairs",
        "_launch_policy",
        "_own",
        "_plain",
        "_policy",
        "_scope",
        "_ungrantable",
        "inherit_credentials",
        "name_context",
        "routed",
        "strip_values",
    )

    def __init__(
        self,
        policy: SecretPolicy,
        *,
        launch_policy: SecretPolicy | None = None,
        routed: bool = False,
        inherit_credentials: bool = False,
        launch_values: Sequence[Mapping[str, str]] = (),
        managed: Mapping[str, str] | None = None,
        caller_values: Sequence[Mapping[str, str]] = (),
        scope: Mapping[str, str] | None = None,
        own: Mapping[str, frozenset[str]] | None = None,
        ungrantable: frozenset[str] = frozenset(),
        formats: FormatTable | None = None,
        known_safe: frozenset[str] = frozenset(),
        strip_values: bool = True,
        home: tuple[str, str] | None = None,
        name_context: bool = True,
    ) -> None:
        """Collect the secret values of one context.

        ``launch_values`` are what the process holds (its env, the base, the
        launch loads): under routing, the launch profile's. ``managed`` are the
        administrator's values, ``caller_values`` the caller's ``extra`` (outside
        an MCP block) and a surface policy's ``set``, ``scope`` the routed
        profile's scope and ``own`` its own values (upper-cased name → values).
        ``ungrantable`` are the upper-cased names of secret sources' credentials.
        ``formats`` is the credential format table (``policy.formats.format_table()``;
        None: no format is a secret); ``known_safe`` names (upper-cased) the
        operator lets keep one.
        ``strip_values=False`` (``Host(strip_value_aliases=False)``): no value is a
        secret value for this child; names are still denied. ``home`` is the
        home variable and the context's home: that exact entry is the child's
        own home (``is_home``), never decided. ``name_context``: an undeclared
        name that says credential, with a value that looks like one, is a Tier 2
        credential (``name_context_of``; on by default, ``Host(name_context=False)`` turns it off).
        """
        self._home = None if home is None else (home[0].upper(), home[1])
        self._policy = policy
        self._launch_policy = None if launch_policy is policy else launch_policy
        self.routed = routed
        self.inherit_credentials = inherit_credentials
        self.strip_values = strip_values
        self.name_context = name_context
        self._own = {} if own is None else own
        self._ungrantable = ungrantable
        self._formats = formats
        self._known_safe = known_safe
        self._host = Secrets()
        self._scope = Secrets()
        self._launch_pairs: set[tuple[str, str]] = set()  # routed: (NAME, value) the launch holds
        self._declared: dict[str, Declaration | None] = {}  # NAME -> the stricter declaration
        self._plain: dict[str, bool] = {}  # name as spelled -> no value under it is read
        managed = {} if managed is None else managed
        # every value the managed file gives a name, in any spelling (POSIX keeps twins)
        managed_up: dict[str, set[str]] = {}
        for key, value in managed.items():
            managed_up.setdefault(key.upper(), set()).add(value)
        seen: set[tuple[str, str]] = set()  # the process env, the base and the loads overlap
        for values in launch_values:
            for pair in values.items():
                if pair in seen:
                    continue
                seen.add(pair)
                key, value = pair
                # the managed file's own value: the administrator's, not the launch's
                launch = routed and value not in managed_up.get(key.upper(), ())
                self._collect_host(key, value, launch=launch)
        for values in (managed, *caller_values):
            for key, value in values.items():
                self._collect_host(key, value, launch=False)
        for key, value in ({} if scope is None else scope).items():
            if len(as_read(value)) >= MIN_SECRET_LENGTH:
                decl = policy.declaration(key.strip()) or self._by_context(key, value)
                if decl is not None:
                    grade = tier_grade(decl, inherit_credentials, ungrantable)
                    if grade is not None:
                        self._scope.add(
                            value, SecretMatch(decl.name, decl.origin, grade, True, False)
                        )
        self._host.seal()
        self._scope.seal()

    def _collect_host(self, key: str, value: str, *, launch: bool) -> None:
        short = len(as_read(value)) < MIN_SECRET_LENGTH
        if not launch and short:
            return
        decl = self.declaration(key) or self._by_context(key, value)
        if decl is None:
            return
        if launch:  # the launch process's value of a declared name: a launch credential
            self._launch_pairs.add((decl.name, as_read(value)))
        if short:
            return
        grade = tier_grade(decl, self.inherit_credentials, self._ungrantable)
        if launch and (grade is None or grade < Grade.HOST):
            # a routed child never gets the launch process's credentials: only a grant
            # hands one over (never the force prefix, whoever's name it is forced to)
            grade = Grade.HOST
        if grade is not None:
            self._host.add(value, SecretMatch(decl.name, decl.origin, grade, True, launch))

    # -- names -----------------------------------------------------------------

    def declaration(self, name: str, *, own: bool = False) -> Declaration | None:
        """How this build declares a name (any case): the stricter of the policies consulted.

        ``own``: the entry is the routed profile's own (its layer says so, or the
        binding's record: ``decision.is_own``), which answers to the target's
        policy only. A name with surrounding whitespace is the name it spells
        (``" OPENAI_BASE_URL"`` is declared like ``OPENAI_BASE_URL``).
        """
        up = name.strip().upper()
        launch = self._launch_policy
        if launch is None or own:
            return self._policy.declaration(up)
        memo = self._declared
        if up in memo:
            return memo[up]
        if len(memo) >= NAMES_KEPT:
            memo.clear()  # a guard's context rule sees many envs: it starts over
        found = memo[up] = stricter_declaration(
            self._policy.declaration(up), launch.declaration(up)
        )
        return found

    def name_context_of(self, name: str, value: str) -> Declaration | None:
        """An undeclared ``name=value`` read as a credential by its name and value, or None.

        A Tier 2 declaration whose origin names the name's credential tokens
        (``policy._name_context``); None when the host turned name context off.
        Asked by ``decision`` for names no policy declares.
        """
        if not self.name_context:
            return None
        tokens = name_context(name, value)
        if tokens is None:
            return None
        origin = Origin(OriginKind.NAME_CONTEXT, " ".join(tokens))
        return Declaration(name.strip().upper(), Tier.TIER2, origin)

    def _by_context(self, key: str, value: str) -> Declaration | None:
        """A value's name-context declaration, so its copies are secret values too.

        None under a ``known_safe`` name (the host passes it knowingly).
        """
        if not self.name_context or self.is_known_safe(key):
            return None
        return self.name_context_of(key, value)

    def reads_pair(self, key: str, value: str) -> bool:
        """True when this rule's secrets depend on the pair ``key=value`` of an env it read.

        The rule reads a pair's value only under a declared name or where name
        context calls it a credential (``_collect_host``): any other pair may
        change without changing what the rule withholds (``_delta``).
        """
        if self.is_plain_name(key):
            return False
        return self.declaration(key) is not None or self._by_context(key, value) is not None

    def is_plain_name(self, key: str) -> bool:
        """True when no value under ``key`` is read (undeclared, no credential token), remembered.

        ``reads_pair`` of such a name is False whatever the value: name context
        reads a value only under a name with a credential token. The decision
        has nothing to say of such a name (``decision._by_name``), only of its value.
        """
        plain = self._plain.get(key)
        if plain is None:
            plain = self.declaration(key) is None and not (
                self.name_context and credential_tokens(key)
            )
            if len(self._plain) >= NAMES_KEPT:
                self._plain.clear()  # the names of a few envs: a guard's many envs start over
            self._plain[key] = plain
        return plain

    @property
    def formats(self) -> FormatTable | None:
        """The credential format table this rule searches with (None: no format is a secret)."""
        return self._formats

    def is_known_safe(self, name: str) -> bool:
        """True when the host passes ``name`` knowingly (``Host(known_safe=...)``)."""
        return name.strip().upper() in self._known_safe

    def withholds(self, decl: Declaration, value: str | None = None, *, own: bool = False) -> bool:
        """True when a name declared as ``decl`` may not reach this child with ``value``.

        Tier 1 always; Tier 2 unless credentials are inherited; under routing, the
        launch process's own value of a declared name too (a launch credential,
        whatever its length), unless the entry is the routed profile's own (``own``).
        """
        inherited = decl.tier is Tier.TIER2 and self.inherit_credentials
        if not inherited:
            return True
        return value is not None and not own and self.is_launch_credential(decl.name, value)

    def is_launch_credential(self, name: str, value: str) -> bool:
        """True when, routed, ``name=value`` is the launch process's value of a declared name."""
        return (name.strip().upper(), as_read(value)) in self._launch_pairs

    def refuses_forcing(self, name: str, value: str) -> bool:
        """True when the force prefix may not hand ``name=value`` to this child.

        A Tier 1 name, or (routed) the launch process's own value of a declared
        name: the force prefix hands over a Tier 2 credential of this home only.
        """
        decl = self.declaration(name)
        if decl is not None and decl.tier is Tier.TIER1:
            return True
        return self.is_launch_credential(name, value) and not self.is_own(name, value)

    @staticmethod
    def forced_keeps(match: SecretMatch) -> bool:
        """True when a forced hand-over keeps the secret its value holds.

        A Tier 2 credential this child does not inherit, or a model provider's
        key under a catalog name of that provider; never a Tier 1 or launch
        secret, never a secret source's credential.
        """
        return match.grade is Grade.CREDENTIAL or (match.shape and match.own_provider)

    def is_ungrantable(self, name: str) -> bool:
        """True for a secret source's credential name (no grant or passthrough ever passes it)."""
        return name.upper() in self._ungrantable

    # -- values ----------------------------------------------------------------

    def is_home(self, key: str, value: str) -> bool:
        """True when ``key=value`` is the home variable naming this context's home."""
        home = self._home
        return home is not None and value == home[1] and key.upper() == home[0]

    def is_own(self, key: str, value: str) -> bool:
        """True when the binding's record holds ``key=value`` as the routed profile's own.

        For an entry whose layer cannot say where it came from: an env the host's
        code handed to a spawn, one a test checks (``decision.own``).
        """
        return self.routed and value in self._own.get(key.strip().upper(), ())

    def find(self, value: str, *, own: bool = False) -> SecretMatch | None:
        """The first secret this value is or contains (whole first), or None.

        ``own``: the value is the routed profile's own, compared with the scope's
        secrets only. The first of ``secret_in``'s declared matches: one search.
        """
        found, _ = self._declared_matches(as_read(value), self._scope, self._host, own=own)
        return found[0] if found else None

    def secret_in(self, key: str, value: str, *, own: bool = False) -> tuple[SecretMatch, ...]:
        """Every secret ``key=value`` is or holds (``decision.decide`` decides with them).

        Each declared secret value this child may not receive (the routed
        scope's first, then the host's, longest first; one occurring only inside
        another is that one's part; a routed profile's own value compared with its
        own secrets only), then each credential format outside those (``SecretMatch.shape``):
        every child's, but a match the rule keeps itself carries its
        ``exemption`` (a ``known_safe`` name; for a child that inherits
        credentials, a model provider's key under a catalog name of that
        provider, as the whole value). Empty when the value holds none. ``own``:
        the entry is the routed profile's own (``decision.own`` says).
        """
        read = as_read(value)  # once: each search below reads the value trimmed
        found, spans = self._declared_matches(read, self._scope, self._host, own=own)
        if self._formats is not None and not (spans and covered(0, len(read), spans, Grade.HOST)):
            found += self._shape_matches(key, value, spans, read)
        return tuple(found)

    def _declared_matches(
        self,
        read: str,
        scope: Secrets,
        host: Secrets,
        *,
        own: bool = False,
    ) -> tuple[list[SecretMatch], list[Span]]:
        """The declared secrets a value (``read``: ``as_read``'s) is or holds, and where.

        The scope's first, then (unless the value is the routed profile's own:
        ``own``) the host's.
        """
        found: list[SecretMatch] = []
        spans: list[Span] = []
        if len(read) < MIN_SECRET_LENGTH:
            return found, spans
        scope.collect(read, found, spans)
        if not own:
            host.collect(read, found, spans)  # a profile's own value: its own secrets only
        return found, spans

    def _shape_matches(
        self, key: str, value: str, spans: Sequence[Span] = (), read: str | None = None
    ) -> list[SecretMatch]:
        """A match for each credential format in ``value`` outside the declared ``spans``.

        ``read`` is ``as_read(value)`` where the caller made it already.

        Under a ``known_safe`` name each is exempt (``KNOWN_SAFE``). A child that
        inherits credentials keeps a model provider's key under a catalog name of
        that provider (``PROVIDER_KEY``) when that key is the whole value
        (trimmed): the exemption covers that key, never a second credential
        beside it, which is a match of its own.
        """
        formats = self._formats
        if formats is None:
            return []
        if read is None:
            read = as_read(value)
        if formats.regex.search(read) is None:
            return []  # the common case, in one C call: every format match starts with one
        # inside a declared secret as strict: that secret decides it
        found = [s for s in formats.spans(read) if not covered(s[1], s[2], spans, Grade.HOST)]
        if not found:
            return []  # no name lookup, no import
        from envscope.policy.formats import FORMATS_SOURCE  # loaded: ``formats`` is its

        name = key.strip().upper()
        provider = self._policy.catalog.provider_of(name)
        safe = name in self._known_safe
        out = []
        for fmt, start, end in found:
            own_provider = fmt.provider is not None and provider == fmt.provider
            exemption = Exemption.KNOWN_SAFE if safe else None
            if (
                exemption is None
                and self.inherit_credentials
                and own_provider
                and (start, end) == (0, len(read))
            ):
                exemption = Exemption.PROVIDER_KEY  # the provider's key is the whole value
            origin = Origin(
                OriginKind.CATALOG,
                f"credential format {fmt.name} ({fmt.issuer})",
                path=FORMATS_SOURCE,
            )
            out.append(
                SecretMatch(
                    fmt.name, origin, Grade.HOST, False, False, True, own_provider, exemption
                )
            )
        return out

    def find_in(
        self,
        items: Sequence[tuple[str, str]],
        owns: Sequence[bool] = (),
        clean: CleanValues | None = None,
    ) -> list[tuple[SecretMatch, ...]]:
        """``secret_in`` for each ``(key, value)``, in order, in one pass for the lot.

        ``owns[i]`` is ``secret_in``'s ``own`` for item ``i`` (none given: False).

        A declared secret that occurs in none of the values (one substring search
        over them all) is not looked for value by value, nor is a credential
        format (one search of the format table over the values still undecided).
        With ``clean`` (a build's view of its memo owner's values known to hold
        no format under this rule's table), that search skips the values the
        owner's last build found clean, and the owner keeps this build's.
        """
        joined = "\x00".join(value for _, value in items)
        host = self._host.present_in(joined)
        scope = self._scope.present_in(joined)
        out: list[tuple[SecretMatch, ...]] = [()] * len(items)
        where: dict[int, list[Span]] = {}  # the values holding a declared secret: its spans
        if host.longest_first or scope.longest_first:  # else no value holds one: not searched
            owned = list(owns) or [False] * len(items)
            for i, (_, value) in enumerate(items):
                found, spans = self._declared_matches(as_read(value), scope, host, own=owned[i])
                if found:
                    out[i] = tuple(found)
                    where[i] = spans
        formats = self._formats
        if formats is None:
            return out
        if clean is not None and clean.table is not formats:
            clean = None  # remembered under another table: every value is searched
        # a value a declared secret covers whole needs no format search
        todo = [
            i
            for i in range(len(items))
            if i not in where or not covered(0, len(as_read(items[i][1])), where[i], Grade.HOST)
        ]
        values = [items[i][1] for i in todo]
        known = frozenset() if clean is None else clean.known_clean
        shapes = formats_in(values, known, formats.find)
        for j in shapes:
            i = todo[j]
            key, value = items[i]
            out[i] += tuple(self._shape_matches(key, value, where.get(i, ())))
        if clean is not None:  # this build's clean values, in place of the last build's
            clean.remember(frozenset([v for j, v in enumerate(values) if j not in shapes]))
        return out

    def public(self, match: SecretMatch) -> str:
        """What an error may name for a match (never a value, never a launch name when routed)."""
        if match.shape:
            return f"a {match.name} credential"
        if match.launch and self.routed:
            return "a launch profile's secret"
        return match.name

    def describe(self, key: str, match: SecretMatch) -> str:
        """``KEY``, or ``KEY (the value of NAME)``, for an error or a log line (see ``public``)."""
        if match.shape:
            return f"{key} (holds {self.public(match)})"
        if match.name == key.upper():
            return key
        if match.launch and self.routed:
            return f"{key} (holds {self.public(match)})"
        return f"{key} ({'the value' if match.whole else 'holds the value'} of {match.name})"

    def __bool__(self) -> bool:
        """True when the rule can find a secret value at all (declared or by format)."""
        return bool(self._host.by_value) or bool(self._scope.by_value) or bool(self._formats)

    def __repr__(self) -> str:
        names = sorted({m.name for d in (self._host, self._scope) for m in d.by_value.values()})
        return f"SecretRule(routed={self.routed}, secrets={names!r})"  # names, never values
