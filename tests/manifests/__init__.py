"""Tests of ``envscope.manifests``: the probe, the scan, the schema, the cache, and faults."""
