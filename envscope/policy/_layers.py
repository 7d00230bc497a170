"""Where an entry of a build came from: its ``Layer``, named once.

Every entry a build handles carries its layer from the moment a stage puts it
in, so no later step works out where a value came from by comparing values.
``PRECEDENCE`` is the order a build lays the layers over each other: a later
layer replaces every spelling of a name an earlier one set. Imports nothing
of envscope.
"""

from __future__ import annotations

import enum

__all__ = ["BLOCK_LAYERS", "CALLER_LAYERS", "LITERAL_LAYERS", "PRECEDENCE", "Layer"]


class Layer(enum.Enum):
    """The layer an entry came from (the value names it in traces and docs)."""

    BASE = "base"  # the parent env: the process env (launch loads included) or the caller's base
    SCOPE = "routed scope"  # the routed home's own values: its .env and secret sources
    MANAGED = "managed"  # the administrator's managed file
    SURFACE_SET = "surface set"  # a surface policy's set: values (and platform defaults)
    EXTRA = "extra"  # the caller's explicit values
    MCP_LITERAL = "mcp literal"  # a value the operator typed into an MCP server's env block
    MCP_REFERENCE = "mcp reference"  # a block value the host resolved: ${NAME}, envFile, forwarded
    MCP_OWN = "mcp own literal"  # a value the routed profile typed into its own MCP config
    GRANT = "grant"  # a key of extra that grant= names: this child receives it as given
    HOME_VAR = "home variable"  # home_env_var: the child's own home
    PASSTHROUGH = "passthrough"  # a passthrough name, forwarded from its source
    FORCED = "forced"  # _ENVSCOPE_FORCE_X unwrapped to X: a forced hand-over
    SPAWN = "spawn"  # an env the host's own code handed to a spawn (what the runtime guard sees)
    ARGV = "argv"  # an MCP server's command, argument or cwd: no env entry, readable by everyone

    # Hashed by identity, in C (a member is its only instance; ``Enum``'s own hash is a
    # Python call): each decision asks whether a layer is in a set of layers.
    __hash__ = object.__hash__


PRECEDENCE: tuple[Layer, ...] = (
    Layer.BASE,
    Layer.SCOPE,
    Layer.MANAGED,
    Layer.SURFACE_SET,
    Layer.EXTRA,  # with MCP_LITERAL, MCP_OWN, MCP_REFERENCE and GRANT: the caller's one mapping
    Layer.HOME_VAR,
    Layer.PASSTHROUGH,
    Layer.FORCED,
)
"""The order of the layers a build lays down (stage 1 strips from ``BASE`` first).

The managed file's values win over the routed profile's (``SCOPE``); a
surface policy's filter never drops a managed key. The caller's own layers
(``extra`` and, on the ``mcp`` surface, the server's block) come after, then
the child's home, then passthrough and forced hand-overs, each of which names
the key it sets. ``SPAWN`` is no layer of a build: it is what the runtime
guard checks.
"""

CALLER_LAYERS = frozenset(
    {Layer.EXTRA, Layer.MCP_LITERAL, Layer.MCP_OWN, Layer.MCP_REFERENCE, Layer.GRANT}
)
"""The layers of the caller's ``extra`` mapping (one of them per key)."""

BLOCK_LAYERS = frozenset({Layer.MCP_LITERAL, Layer.MCP_OWN, Layer.MCP_REFERENCE})
"""An MCP server's env block: the operator named the key, so its name passes as configured."""

LITERAL_LAYERS = frozenset({Layer.MCP_LITERAL, Layer.MCP_OWN})
"""A value typed into an MCP server's block (never one the host resolved)."""
