"""The reason vocabulary: what a stage did to a key (``Action``), at which stage
(``Stage``) and why (``Reason``), with each reason's human sentence.

It lives with the policy because policy objects (a surface's filter) answer with
a ``Reason``; the trace (``envscope.audit.trace``) records these and re-exports
them. Imports nothing of envscope.
"""

from __future__ import annotations

import enum

__all__ = ["RESIDUE_REASONS", "SUMMARY_GROUPS", "Action", "Reason", "Stage"]


class Action(enum.Enum):
    """What a stage did to a key."""

    KEPT = "kept"
    STRIPPED = "stripped"
    OVERRIDDEN = "overridden"
    ADDED = "added"
    REFUSED = "refused"


class Stage(enum.Enum):
    """The pipeline stage that made a decision (docs/concepts.md, the pipeline)."""

    RESIDUE = "residue"
    OVERLAY = "overlay"
    MANAGED = "managed"
    SANITIZE = "sanitize"
    EXTRA = "extra"


class Reason(enum.Enum):
    """Why a decision was made; ``sentence`` is the human form."""

    INHERITED = "inherited"
    GLOBAL_NAME = "global-name"
    MANAGED_KEY = "managed-key"
    LAUNCH_RESIDUE = "launch-residue"
    LAUNCH_GATE = "launch-gate"
    LAUNCH_CREDENTIAL = "launch-credential"
    SCOPE_VALUE = "scope-value"
    MANAGED_VALUE = "managed-value"
    TIER1 = "tier1"
    TIER2 = "tier2"
    TIER2_INHERITED = "tier2-inherited"
    CALLER_EXTRA = "caller-extra"
    FORCED = "forced"
    FORCE_REFUSED = "force-refused"
    FORCE_PREFIX_IN_BASE = "force-prefix-in-base"
    PASSTHROUGH = "passthrough"
    PASSTHROUGH_NOT_IN_SCOPE = "passthrough-not-in-scope"
    NOT_ALLOWLISTED = "not-allowlisted"
    SHELL_FUNCTION = "shell-function"
    CASE_DUPLICATE = "case-duplicate"
    HOME_VAR = "home-var"
    UNSCRUBBED = "unscrubbed"
    NOT_INHERITED = "not-inherited"
    EXCLUDED = "excluded"
    INCLUDED = "included"
    SURFACE_SET = "surface-set"
    ALIAS_OF = "alias-of"
    VALUE_SHAPE = "value-shape"
    TOO_LARGE = "too-large"
    INVALID_NAME = "invalid-name"
    INJECTION_VECTOR = "injection-vector"
    SERVER_GRANT = "server-grant"
    GRANTED = "granted"
    OPERATOR_LITERAL = "operator-literal"
    KNOWN_SAFE = "known-safe"
    PROVIDER_KEY = "provider-key"
    VALUES_KEPT = "values-kept"
    MCP_SDK_DEFAULT = "mcp-sdk-default"
    SPAWN_CWD = "spawn-cwd"
    NAME_CONTEXT = "name-context"

    @property
    def sentence(self) -> str:
        """A short human sentence for this reason."""
        return _SENTENCES[self]


_SENTENCES: dict[Reason, str] = {
    Reason.INHERITED: "inherited from the parent; no rule declares it",
    Reason.GLOBAL_NAME: "a global name; never launch residue",
    Reason.MANAGED_KEY: (
        "an administrator-managed key: never launch residue, kept by every surface policy"
    ),
    Reason.LAUNCH_RESIDUE: "the launch profile put it into the process env",
    Reason.LAUNCH_GATE: "an authorization gate of the launch profile",
    Reason.LAUNCH_CREDENTIAL: "a launch credential; a routed child gets its own profile's",
    Reason.SCOPE_VALUE: "the routed profile's own value",
    Reason.MANAGED_VALUE: "the administrator's value beats the profile's",
    Reason.TIER1: "a Tier 1 secret: no child ever receives it",
    Reason.TIER2: "a Tier 2 credential: this child does not inherit credentials",
    Reason.TIER2_INHERITED: "a Tier 2 credential kept for a credentialed child",
    Reason.CALLER_EXTRA: "set explicitly by the caller",
    Reason.FORCED: "handed over by the caller through the force prefix",
    Reason.FORCE_REFUSED: "the force prefix never unwraps to a Tier 1 name",
    Reason.FORCE_PREFIX_IN_BASE: "a force-prefixed key in the base is dropped, never unwrapped",
    Reason.PASSTHROUGH: "forwarded by a passthrough request",
    Reason.PASSTHROUGH_NOT_IN_SCOPE: "passthrough name absent from the routed scope",
    Reason.NOT_ALLOWLISTED: "not on this surface's allowlist",
    Reason.SHELL_FUNCTION: "an exported shell function never reaches this surface",
    Reason.CASE_DUPLICATE: "another key differing only in case was kept",
    Reason.HOME_VAR: "the child's own home",
    Reason.UNSCRUBBED: "scrubbing turned off by the caller",
    Reason.NOT_INHERITED: "this surface's policy does not inherit it",
    Reason.EXCLUDED: "excluded by this surface's policy",
    Reason.INCLUDED: "included by this surface's policy",
    Reason.SURFACE_SET: "set by this surface's policy",
    Reason.ALIAS_OF: "holds the same value as a stripped secret (named in the note)",
    Reason.VALUE_SHAPE: "holds a credential in a known format (named in the note; no rule "
    "declares the name: list it in known_safe to keep it)",
    Reason.TOO_LARGE: "larger than a child env can carry",
    Reason.INVALID_NAME: "not a valid environment entry (a name with '=' or NUL, or a NUL value)",
    Reason.INJECTION_VECTOR: "changes how a child's loader, shell or interpreter starts; "
    "only the launch env or the host may set it",
    Reason.SERVER_GRANT: "granted by the server's env block",
    Reason.GRANTED: "granted to this child by the caller (grant=)",
    Reason.OPERATOR_LITERAL: (
        "a credential the operator typed into the server's env block (never a value the "
        "host resolved)"
    ),
    Reason.KNOWN_SAFE: (
        "a known_safe name: its credential format or credential name is passed knowingly"
    ),
    Reason.PROVIDER_KEY: "a credentialed child's own model-provider key (the whole value)",
    Reason.VALUES_KEPT: "holds a secret value; the host keeps copies (strip_value_aliases=False)",
    Reason.MCP_SDK_DEFAULT: "added by the MCP SDK from os.environ (sdk_defaults='allow')",
    Reason.SPAWN_CWD: "the directory the spawn starts the child in (cwd=), not the launcher's",
    Reason.NAME_CONTEXT: (
        "no rule declares it, but its name says credential and its value looks like one "
        "(the tokens in the note): this child does not inherit credentials; grant it, list "
        "it in known_safe, or turn name_context off"
    ),
}

RESIDUE_REASONS = frozenset({Reason.LAUNCH_RESIDUE, Reason.LAUNCH_GATE})

SUMMARY_GROUPS: tuple[tuple[str, str, frozenset[Reason], bool], ...] = (
    (
        "declared secret",
        "declared secrets",
        frozenset(
            {
                Reason.TIER1,
                Reason.TIER2,
                Reason.LAUNCH_CREDENTIAL,
                Reason.FORCE_REFUSED,
                Reason.ALIAS_OF,
            }
        ),
        True,
    ),
    (
        "undeclared credential",
        "undeclared credentials",
        frozenset({Reason.VALUE_SHAPE, Reason.NAME_CONTEXT}),
        False,
    ),
    ("injection vector", "injection vectors", frozenset({Reason.INJECTION_VECTOR}), False),
    ("launch residue", "launch residue", RESIDUE_REASONS, True),
    (
        "by surface policy",
        "by surface policy",
        frozenset(
            {Reason.NOT_INHERITED, Reason.EXCLUDED, Reason.NOT_ALLOWLISTED, Reason.MCP_SDK_DEFAULT}
        ),
        False,
    ),
)
"""How ``Trace.summary()`` counts the keys a build removed, in its order: each group's
noun (one, many), its reasons, and whether it is shown at zero; any other reason
(a shell function, an oversized value, an invalid name, a case duplicate…) is
"by other rules"."""
