"""Pipeline: the four build stages and what they share.

Owns stages 1-3 (``stages``: residue, overlay, managed), stage 4
(``_sanitize``), the one secret rule every enforcer asks (``secret_rule``),
the launch-residue rule (``_residue_rule``), the build memo
(``_memo``), a routed home's binding (``_binding``), what a build reads
(``_request``: the request record, its memo roles and key) and one build over
one request (``build``). Stages are pure: a mapping in, a new mapping out.

May import: ``envscope.manifests``, ``envscope.audit``, ``envscope.policy``,
``envscope.files``, ``envscope._inputs``, ``envscope.errors``. Never the host
or cli.
"""
