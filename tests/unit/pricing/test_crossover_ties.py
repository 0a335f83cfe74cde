"""A crossover is a change of the fastest algorithm, never a step between equal times."""

import numpy as np

from synth.pricing.compare import Candidate, Comparison


def comparison(times) -> Comparison:
    found = [Candidate(label, 1, None) for label in ("a", "b", "c")]
    times = np.array(times, dtype=float)
    return Comparison("allreduce", [1 << k for k in range(len(times))], found, times, [], times.min(axis=1), "minimal")


def test_equal_times_are_no_crossover():
    # b ties a at the second size, then a is slower: one crossover (at the third size), not at the second
    c = comparison([[1.0, 2.0, 5.0], [2.0, 2.0, 5.0], [3.0, 2.5, 5.0], [4.0, 2.5 * (1 + 1e-15), 5.0]])
    assert c.best_index.tolist() == [0, 0, 1, 1]
    assert c.crossovers() == [(4, "a", "b")]
    assert c.crossover_text() == "a -> b at 4B"


def test_ties_everywhere_keep_the_first():
    c = comparison([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    assert c.best_index.tolist() == [0, 0] and c.crossover_text() == "none: a is best at every size"


def test_a_tie_after_a_change_keeps_the_new_best():
    c = comparison([[1.0, 2.0, 9.0], [3.0, 2.0, 9.0], [2.0, 2.0, 9.0]])
    assert c.best_index.tolist() == [0, 1, 1] and c.crossovers() == [(2, "a", "b")]
