"""Capacity per instance type: absent types count zero, arithmetic keeps whole counts whole."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shareplane.domain.instance_types.capacity import Capacity

P4, P5 = "ml.p4d.24xlarge", "ml.p5.48xlarge"
counts = st.dictionaries(st.sampled_from([P4, P5, "ml.g5.xlarge"]), st.integers(0, 500), max_size=3)


def test_a_type_that_is_absent_holds_none_and_a_whole_count_stays_an_int() -> None:
    held = Capacity({P4: 3})
    assert held.of(P5) == 0 and isinstance(held.of(P5), int)
    assert held.plus(P4, 2).of(P4) == 5 and isinstance(held.plus(P4, 2).of(P4), int)
    assert held.minus(P5, 1) == {P4: 3, P5: -1}


@pytest.mark.parametrize(
    ("held", "other", "excess"),
    [({P4: 5}, {P4: 3}, 2), ({P4: 2}, {P4: 3}, 0), ({P4: 2}, {}, 2), ({}, {P4: 3}, 0)],
    ids=["above the other", "within it", "the other holds none", "nothing held"],
)
def test_excess_over_is_what_is_held_beyond_the_other(
    held: dict[str, int], other: dict[str, int], excess: int
) -> None:
    assert Capacity(held).excess_over(Capacity(other), P4) == excess


@given(counts, counts)
def test_adding_capacities_adds_each_type(left: dict[str, int], right: dict[str, int]) -> None:
    total = Capacity(left) + Capacity(right)
    assert all(total.of(u) == left.get(u, 0) + right.get(u, 0) for u in set(left) | set(right))
    assert total.total == sum(left.values()) + sum(right.values())


def test_it_reads_as_a_mapping_equal_to_a_dict_and_survives_copies() -> None:
    held = Capacity({P4: 3, P5: 1})
    assert held == {P4: 3, P5: 1} and {P4: 3, P5: 1} == held and dict(held) == {P4: 3, P5: 1}
    assert held[P4] == 3 and len(held) == 2 and sorted(held) == [P4, P5] and sum(held.values()) == 4
    assert copy.deepcopy(held) == held and pickle.loads(pickle.dumps(held)) == held
    with pytest.raises(TypeError):
        held.units[P4] = 9  # type: ignore[index]
    with pytest.raises(AttributeError):
        held._counts = {}
