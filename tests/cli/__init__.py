"""Tests of ``envscope.cli``: the commands, the config file and its trust, the docs' outputs."""
