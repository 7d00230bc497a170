"""Hypothesis profiles for the property suite, chosen by ``HYPOTHESIS_PROFILE`` (default ``ci``).

- ``ci``: 100 examples per test, derandomized (the same examples on every run,
  so CI is deterministic), no example database, a 1 s deadline per example.
- ``fuzz``: 20,000 examples per test, random, with the example database (so a
  failure found once is replayed first next time); same 1 s deadline.

The stateful machines (``test_host_machine.py``) run ``MACHINE_EXAMPLES``
histories of 30 steps each: a history is dozens of builds over real files, so
CI runs fewer of them than of the other properties; ``fuzz`` runs the full
20,000.

``make fuzz`` runs ``HYPOTHESIS_PROFILE=fuzz pytest -m property tests/property``
(and the concurrency soak at full scale).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEADLINE_MS = 1000
PROFILES = ("ci", "fuzz")

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=DEADLINE_MS,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    deadline=DEADLINE_MS,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in PROFILES:
    raise ValueError(f"HYPOTHESIS_PROFILE must be one of {PROFILES}, not {PROFILE!r}")
settings.load_profile(PROFILE)
MACHINE_EXAMPLES = {"ci": 60, "fuzz": 20_000}[PROFILE]
