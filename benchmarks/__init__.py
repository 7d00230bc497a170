"""envscope benchmarks: ``python -m benchmarks.run`` (``make bench``).

``workloads`` generates the W1/W2 trees in a temp dir from a fixed seed;
``measure`` holds the timing helpers and the hand-written floor; ``figures``
measures each figure against its target; ``run`` runs them all and prints the
table. ``benchmarks/README.md`` says how each figure is measured; ``docs/performance.md``
what a user can expect.
"""
