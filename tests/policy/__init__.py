"""Tests of ``envscope.policy``: catalog, adapters, surfaces, secret sources, injection."""
