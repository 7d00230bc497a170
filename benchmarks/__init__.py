"""envscope benchmarks: ``python -m benchmarks.run`` (``make bench``).

``workloads`` generates the W1/W2 trees in a temp dir from a fixed seed;
``run`` measures every figure of issue #5 and prints it with its target.
See ``docs/performance.md``.
"""
