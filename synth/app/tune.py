"""`synth tune`: Open MPI's coll_tuned dynamic rules from `compare`'s choice per message size.

Per collective: every algorithm synth compares on the network (synth.pricing.compare), priced at the
message sizes; of those that are one of coll_tuned's (synth.io.coll_tuned.ALGORITHMS, a ring only
where its schedule is the ring r -> r + 1), the least time at each size (equal times, to the model's
last bits: the previous size's choice where it is one of them, else the first). Consecutive sizes of
one choice are a band; a band's rule starts at its first size, the first band's at 0 (so every
message size has a rule: below the first size priced the first choice holds, above the last the
last). The communicator size is the network's ranks (terminals x ranks per node); coll_tuned applies
the rule to every communicator of at least that many ranks, and to smaller ones too where it is the
only size in the file (coll_tuned_dynamic_rules.c).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.io.coll_tuned import (DECISION_BYTES, Algorithm, CollectiveRules, Rule, algorithms, collective_id,
                                 open_mpi_name, write_rules)
from synth.pricing.alphabeta import FREE, NodeCosts
from synth.pricing.compare import MODEL_TIE, REFERENCE_BYTES, sticky_best, compare


@dataclass(frozen=True)
class Band:
    first: int  # the first message size priced in the band
    last: int  # the last
    labels: tuple[str, ...]  # synth's algorithms chosen in it (two where both are one of coll_tuned's)
    algorithm: Algorithm  # coll_tuned's
    times: tuple[float, float]  # the model's time at first and at last (seconds)


@dataclass(frozen=True)
class Tuned:
    collective: str
    ranks: int
    router: str
    bands: list[Band]
    left_out: list[str]  # synth's candidates that are none of coll_tuned's, with why
    sizes: list[int]  # the message sizes priced

    def rules(self) -> CollectiveRules:
        return CollectiveRules(collective_id(self.collective), self.ranks, tuple(
            Rule(0 if i == 0 else band.first, band.algorithm.number,
                 note=f"{band.algorithm.name} (synth's {' then '.join(band.labels)})")
            for i, band in enumerate(self.bands)),
            note=f"{open_mpi_name(self.collective)}: message size is {DECISION_BYTES[self.collective]}")


def check_collective(name: str) -> None:
    """One line for a collective synth does not know, or one coll_tuned has no rules for here."""
    from synth.collectives.schedule import collective

    collective(name)  # naming the known ones
    collective_id(name)
    if not algorithms(name):
        raise SynthError(f"coll_tuned has none of synth's {name} algorithms")


def _is_rank_ring(candidate, ranks: int) -> bool:
    """Every transfer of the candidate's schedule goes from rank r to rank r + 1 mod P."""
    schedule = candidate.make(REFERENCE_BYTES)
    return bool(np.all((np.asarray(schedule.dst) - np.asarray(schedule.src)) % ranks == 1))


def tune(name: str, topology, sizes: list[int] | None, router: str | None, alpha: float, bandwidth_bits: float,
         node: NodeCosts = FREE, ranks_per_node: int = 1) -> Tuned:
    """The bands of `name` on `topology` (module docstring); one line when none of synth's algorithms
    for it is one of coll_tuned's."""
    check_collective(name)
    known = algorithms(name)
    result = compare(name, topology, sizes, router, alpha, bandwidth_bits, node, ranks_per_node)
    ranks = topology.network().num_terminals * ranks_per_node
    columns, left_out = [], []
    for j, candidate in enumerate(result.candidates):
        same = known.get(candidate.label)
        if same is None:
            left_out.append(f"{candidate.label}: not one of coll_tuned's {open_mpi_name(name)} algorithms")
        elif same.rank_ring and not _is_rank_ring(candidate, ranks):
            left_out.append(f"{candidate.label}: not the ring r -> r + 1 of coll_tuned's {same.name} here")
        else:
            columns.append(j)
    left_out += [line for line in result.skipped if line.split(":", 1)[0] in known]  # coll_tuned's, not priced here
    if not columns:
        raise SynthError(f"none of the {name} algorithms synth prices on {topology.spec} is one of coll_tuned's "
                         f"({', '.join(sorted(known))}): " + "; ".join(left_out + result.skipped))
    times = result.times[:, columns]
    best = sticky_best(times, MODEL_TIE)
    bands: list[Band] = []
    for i, n in enumerate(result.sizes):
        j = columns[int(best[i])]
        label = result.candidates[j].label
        same, t = known[label], float(result.times[i, j])
        if bands and bands[-1].algorithm.number == same.number:  # rd-b then rabenseifner: one coll_tuned algorithm
            last = bands[-1]
            labels = last.labels if label in last.labels else (*last.labels, label)
            bands[-1] = Band(last.first, n, labels, last.algorithm, (last.times[0], t))
        else:
            bands.append(Band(n, n, (label,), same, (t, t)))
    return Tuned(name, ranks, result.router, bands, left_out, list(result.sizes))


def rules_text(tuned: list[Tuned], made_by: str) -> str:
    """The rules file for every collective tuned, its header saying what made it (`made_by`)."""
    return write_rules([t.rules() for t in tuned], header=f"Open MPI coll_tuned dynamic rules (Open MPI 4.1's "
                       f"format): {made_by}")
