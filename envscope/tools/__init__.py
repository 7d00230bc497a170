"""The command line's tools: what ``envscope explain``/``diff``/``check-spawns`` compute.

Owns the text report and the snapshot format (``_report``), the snapshot reader
(``_snapshot``) and the spawn check over source code (``_spawn_check``, with its
name resolution ``_spawn_scope``, file walk ``_spawn_files`` and ignore rules
``_ignore``). Pure functions over a trace, a snapshot or source text: they sit
above the host, where the command line uses them, so no build can reach them.

May import: ``envscope.audit``, ``envscope.policy``, ``envscope.files``,
``envscope._inputs``, ``envscope.errors``. Never ``envscope`` itself, the cli,
or anything that would make ``import envscope`` load them.
"""
