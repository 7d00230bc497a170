"""``_lru.LRU``: the one cache bounded by count; a hit or a put makes a key the most recent."""

from __future__ import annotations

import pytest

from envscope._lru import LRU

# (operations, the keys left, least recent first) with maxsize 3
CASES: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "fills in order": ([("put", "a"), ("put", "b"), ("put", "c")], ["a", "b", "c"]),
    "the least recent goes": ([("put", k) for k in "abcd"], ["b", "c", "d"]),
    "a hit keeps a key": (
        [("put", "a"), ("put", "b"), ("put", "c"), ("hit", "a"), ("put", "d")],
        ["c", "a", "d"],
    ),
    "a put again refreshes": (
        [("put", "a"), ("put", "b"), ("put", "c"), ("put", "a"), ("put", "d")],
        ["c", "a", "d"],
    ),
    "a miss changes nothing": ([("put", "a"), ("hit", "z"), ("put", "b")], ["a", "b"]),
    "pop forgets": ([("put", "a"), ("put", "b"), ("pop", "a"), ("pop", "z")], ["b"]),
}


@pytest.mark.parametrize("case", CASES)
def test_recency_and_bound(case: str) -> None:
    operations, left = CASES[case]
    lru: LRU[str, int] = LRU(3)
    for n, (op, key) in enumerate(operations):
        if op == "put":
            lru.put(key, n)
        elif op == "hit":
            lru.hit(key)
        else:
            lru.pop(key)
    assert [k for k, _ in lru.items()] == left
    assert len(lru) == len(left)
    assert all(k in lru for k in left)


def test_hit_answers_the_value_and_none_for_a_miss() -> None:
    lru: LRU[str, str] = LRU(2)
    lru.put("k", "value")
    assert lru.hit("k") == "value"
    assert lru.hit("missing") is None
    assert lru.pop("k") == "value"
    lru.put("k", "again")
    lru.clear()
    assert len(lru) == 0
    assert lru.values() == []


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        LRU(0)


def test_its_repr_shows_no_value() -> None:
    lru: LRU[str, str] = LRU(4)
    lru.put("TOKEN", "s3cr3t-value")
    assert "s3cr3t" not in repr(lru)
    assert repr(lru) == "LRU(1 entries, maxsize=4)"
