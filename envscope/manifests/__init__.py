"""Manifests: plugin manifests, from the directory scan to the cached result.

Owns the manifest schema (``_schema``, the one pydantic model), the plugin
directory probe (``_probe``), the scan of a plugin root (``_scan``) and the
signature-keyed cache (``_cache``).

May import: ``envscope.policy``, ``envscope.files``, ``envscope._inputs``,
``envscope.errors``. Never the pipeline, audit, host or cli.
"""
