"""Tests of ``envscope.pipeline``: the stages, tiers, routing, passthrough, aliases, the memo."""
