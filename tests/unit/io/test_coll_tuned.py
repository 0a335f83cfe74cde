"""synth.io.coll_tuned: the rules file written is the one read back, as Open MPI 4.1's reader takes it
(coll_tuned_dynamic_file.c: integers, '#' to the end of a line skipped, the first rule at size 0)."""

from __future__ import annotations

import pytest

from synth.core.errors import SynthError
from synth.io.coll_tuned import (ALGORITHMS, COLLECTIVES, CollectiveRules, Rule, algorithms, collective_id,
                                 read_rules, write_rules)

TWO = [CollectiveRules(2, 8, (Rule(0, 3, note="recursive_doubling"), Rule(32768, 6), Rule(131072, 4)), note="allreduce"),
       CollectiveRules(0, 8, (Rule(0, 2), Rule(131072, 4, 0, 0)))]


def test_written_rules_read_back():
    text = write_rules(TWO, header="made by a test\nsecond line")
    assert read_rules(text) == [CollectiveRules(c.collective_id, c.comm_size, tuple(Rule(r.message_size, r.algorithm)
                                                                                    for r in c.rules)) for c in TWO]
    assert text.startswith("# made by a test\n# second line\n2  # collectives\n")


def test_the_numbers_are_in_coll_tuneds_order():
    """The numbers alone, comments dropped: count, then per collective id, 1 communicator size, size and
    rule count, then msg_size algorithm faninout segsize per rule."""
    numbers = [int(w) for line in write_rules(TWO).splitlines() for w in line.split("#")[0].split()]
    assert numbers == [2, 2, 1, 8, 3, 0, 3, 0, 0, 32768, 6, 0, 0, 131072, 4, 0, 0, 0, 1, 8, 2, 0, 2, 0, 0, 131072, 4, 0, 0]


def test_a_file_of_several_communicator_sizes_reads():
    text = "1\n3\n2\n4 1\n0 2 0 0\n16 2\n0 3 0 0\n1024 1 0 0\n"
    assert read_rules(text) == [CollectiveRules(3, 4, (Rule(0, 2),)), CollectiveRules(3, 16, (Rule(0, 3), Rule(1024, 1)))]


@pytest.mark.parametrize("rules, message", [
    ([CollectiveRules(2, 8, (Rule(16, 3),))], "first rule must be for message size 0"),
    ([CollectiveRules(2, 8, (Rule(0, 3), Rule(0, 4)))], "do not increase"),
    ([CollectiveRules(2, 8, (Rule(0, 0),))], "algorithm below 1"),
    ([CollectiveRules(2, 8, (Rule(0, 3),)), CollectiveRules(2, 4, (Rule(0, 3),))], "repeat"),
])
def test_the_writer_refuses_what_open_mpi_would_refuse_or_misread(rules, message):
    with pytest.raises(SynthError, match=message):
        write_rules(rules)


@pytest.mark.parametrize("text, message", [
    ("1\n2\n1\n8 1\n64 3 0 0\n", "first rule must be for message size 0"),
    ("1\n2\n1\n8 2\n0 3 0 0\n", "ends before a message size"),
    ("1\n2\n1\n8 1\n0 3 0 0\n7\n", "1 numbers after the last rule"),
    ("1\n2\n1\n8 1\n0 0x3 0 0\n", "'0x3' is not a decimal integer"),
    ("1\n2\n1\n8 1\n0 -3 0 0\n", "an algorithm -3 is negative"),
])
def test_the_reader_refuses_in_one_line(text, message):
    with pytest.raises(SynthError, match=message) as caught:
        read_rules(text)
    assert "\n" not in str(caught.value)


def test_ids_and_map():
    """COLLTYPE ids of coll_base_functions.h (v4.1.4); every mapped collective has an id, every number >= 1."""
    assert dict((name, number) for name, _, number in COLLECTIVES) == {
        "allgather": 0, "allreduce": 2, "alltoall": 3, "broadcast": 7, "gather": 9, "reduce": 11,
        "reduce-scatter": 12, "scatter": 15}
    assert all(collective_id(a.collective) >= 0 and a.number >= 1 for a in ALGORITHMS)
    assert {label: a.number for label, a in algorithms("allreduce").items()} == {
        "rd-l": 3, "ring": 4, "rabenseifner": 6, "rd-b": 6}
    with pytest.raises(SynthError, match="p2p has no coll_tuned dynamic rules here"):
        collective_id("p2p")
