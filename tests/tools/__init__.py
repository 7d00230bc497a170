"""Tests of ``envscope.tools``: the report, snapshots, check-spawns."""
