"""Tests of ``envscope.audit``: trace, findings, fingerprints."""
