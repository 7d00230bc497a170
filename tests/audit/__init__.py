"""Tests of ``envscope.audit``: trace, findings, fingerprints, snapshots, check-spawns."""
