"""Audit: what a build writes about its decisions.

Owns the trace (``trace``), findings (``_findings``) and keyed value
fingerprints (``_fingerprint``): what the pipeline records. The tools that
show or check it (report, snapshots, the spawn check) are ``envscope.tools``.

May import: ``envscope.policy``, ``envscope.files``, ``envscope._inputs``,
``envscope.errors``. Never the pipeline, manifests, host, tools or cli.
"""
