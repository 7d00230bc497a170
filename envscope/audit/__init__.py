"""Audit: what a build decided and how to show or check it.

Owns the trace (``trace``), findings (``_findings``), keyed value
fingerprints (``_fingerprint``), the text report (``_report``), snapshots
(``_snapshot``) and the spawn check over source code (``_spawn_check``,
``_spawn_scope``).

May import: ``envscope.policy``, ``envscope.files``, ``envscope._inputs``,
``envscope.errors``. Never the pipeline, manifests, host or cli.
"""
