"""Policy: what is a secret and who may see it.

Owns the declaration records and tiers (``_declarations``), the reason
vocabulary (``_reasons``), the catalog and its schema and data
(``catalog`` over ``_catalog_schema`` over ``_catalog_records``, ``data/catalog.yaml``,
``_catalog_doc``),
the resolved ``SecretPolicy`` and census (``_secret_policy``), surfaces
(``surfaces``) and secret sources (``sources``).

May import: ``envscope.files``, ``envscope._inputs``, ``envscope.errors``.
Never the pipeline, manifests, audit, host or cli.
"""
