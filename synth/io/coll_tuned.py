"""Open MPI's coll_tuned dynamic rules file (Open MPI 4.1; `synth tune` writes it, docs/formats.md).

Open MPI loads it with `--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename FILE`.
The format, as ompi/mca/coll/tuned/coll_tuned_dynamic_file.c (v4.1.4) reads it: whitespace-separated
decimal integers (a '#' where a number is due starts a comment to the end of the line):

    NUMBER_OF_COLLECTIVES
    for each collective:  COLLECTIVE_ID                  (the COLLTYPE enum, coll_base_functions.h)
                          NUMBER_OF_COMMUNICATOR_SIZES
      for each size:      COMMUNICATOR_SIZE  NUMBER_OF_MESSAGE_SIZES
        for each rule:    MESSAGE_SIZE  ALGORITHM  TOPO_FANINOUT  SEGSIZE

The first rule of a communicator size must be for message size 0 (the reader refuses the file
otherwise). A communicator of C ranks takes the last communicator size <= C (the first if none is;
coll_tuned_dynamic_rules.c, ompi_coll_tuned_get_com_rule_ptr), a call of message size m the last rule
whose MESSAGE_SIZE <= m (ompi_coll_tuned_get_target_method_params). ALGORITHM 0 means "the compiled-in
decision", so every rule here names one of 1..n. A file the reader refuses is ignored as a whole,
silently in a release build (its messages are OPAL_OUTPUT, compiled out without --enable-debug).

What MESSAGE_SIZE is compared with (coll_tuned_decision_dynamic.c, v4.1.4): DECISION_BYTES below.
For every collective here it is the same number as synth's message size (synth.collectives.schedule:
allreduce, broadcast and reduce the vector; allgather, gather and scatter the whole gathered vector,
P blocks; alltoall what one rank sends, P blocks; reduce-scatter the whole vector, P blocks), so a
band's first size is its rule's MESSAGE_SIZE as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from synth.core.errors import SynthError

# synth's collective -> (Open MPI's name, its COLLTYPE id: ompi/mca/coll/base/coll_base_functions.h, v4.1.4:
# ALLGATHER = 0, ALLGATHERV, ALLREDUCE, ALLTOALL, ALLTOALLV, ALLTOALLW, BARRIER, BCAST, EXSCAN, GATHER, GATHERV,
# REDUCE, REDUCESCATTER, REDUCESCATTERBLOCK, SCAN, SCATTER, ...)
COLLECTIVES = (
    ("allgather", "allgather", 0),
    ("allreduce", "allreduce", 2),
    ("alltoall", "alltoall", 3),
    ("broadcast", "bcast", 7),
    ("gather", "gather", 9),
    ("reduce", "reduce", 11),
    ("reduce-scatter", "reduce_scatter", 12),
    ("scatter", "scatter", 15),
)

# What each decision function compares with MESSAGE_SIZE (coll_tuned_decision_dynamic.c, v4.1.4); dsize is the
# datatype's size, P the communicator's size.
DECISION_BYTES = {
    "allgather": "dsize * scount * P (the whole gathered vector)",
    "allreduce": "dsize * count (the vector)",
    "alltoall": "dsize * scount * P (what one rank sends)",
    "broadcast": "dsize * count (the vector)",
    "gather": "dsize * scount * P (the whole gathered vector)",
    "reduce": "dsize * count (the vector)",
    "reduce-scatter": "dsize * (rcounts[0] + ... + rcounts[P-1]) (the whole vector)",
    "scatter": "dsize * scount * P (the whole scattered vector)",
}


@dataclass(frozen=True)
class Algorithm:
    """A synth algorithm that is one of coll_tuned's: its number (ompi_info --param coll tuned --level 9:
    coll_tuned_<collective>_algorithm) and name there."""

    collective: str  # synth's
    label: str  # synth's algorithm (a compare candidate's label)
    number: int
    name: str  # coll_tuned's
    # the same only when every transfer goes from rank r to r + 1 mod P (coll_tuned's ring); synth's ring
    # allreduce on a 2D torus runs four rings on Hamiltonian cycles instead (synth.collectives.algorithms.ring)
    rank_ring: bool = False


# The pairs that are the same algorithm: the same exchanges between the same ranks (the implementations read:
# ompi/mca/coll/base/coll_base_<collective>.c, v4.1.4). Segmented, pipelined and chained variants, linear ones
# through the root, k-nomial trees and the neighbour exchange have no synth counterpart and are not listed.
ALGORITHMS = (
    # allreduce 3: log2 P exchanges of the whole vector with rank ^ 2^k, distance 1 first; P not a power of two
    # folds pairs first (Open MPI keeps the odd rank of a pair, synth the even one: the same exchanges mirrored).
    Algorithm("allreduce", "rd-l", 3, "recursive_doubling"),
    # allreduce 4: reduce-scatter then allgather around the ring r -> r + 1, P - 1 steps each, a block per rank.
    Algorithm("allreduce", "ring", 4, "ring", rank_ring=True),
    # allreduce 6 (redscat_allgather): Rabenseifner, recursive halving reduce-scatter then recursive doubling
    # allgather, the same folding for other P. Open MPI halves at distance 1 first (and gathers from P/2), synth
    # at P/2 first (and gathers from 1): the same messages between the same pairs, the distances in mirrored order.
    Algorithm("allreduce", "rabenseifner", 6, "rabenseifner"),
    Algorithm("allreduce", "rd-b", 6, "rabenseifner"),  # rabenseifner on a power of two P, no folding
    # allgather 2: step k sends the 2^k blocks gathered so far to rank r - 2^k (receives from r + 2^k).
    Algorithm("allgather", "bruck", 2, "bruck"),
    # allgather 3: power-of-two P, step k exchanges the aligned group of 2^k blocks with r ^ 2^k.
    Algorithm("allgather", "rd-l", 3, "recursive_doubling"),
    Algorithm("allgather", "rd-b", 3, "recursive_doubling"),  # the same doubling (rd-b's allgather half)
    # allgather 4: P - 1 steps, each rank forwards to r + 1 the block it received last.
    Algorithm("allgather", "ring", 4, "ring", rank_ring=True),
    # alltoall 1 (linear): every block posted at once straight to its destination (synth's one spread-out step).
    Algorithm("alltoall", "spread-out", 1, "linear"),
    # alltoall 2: P - 1 steps, step k to r + k (from r - k).
    Algorithm("alltoall", "pairwise", 2, "pairwise"),
    # alltoall 3 (modified Bruck): ceil(log2 P) steps, step k sends to r + 2^k the blocks whose offset has bit k.
    Algorithm("alltoall", "bruck", 3, "modified_bruck"),
    # bcast 6: the binomial tree whose parent of relative rank v is v less its highest bit (coll_base_topo.c,
    # build_bmtree), the root sending to 1, 2, 4, ...
    Algorithm("broadcast", "binomial", 6, "binomial"),
    # reduce 5, gather 2, scatter 2: the in-order binomial tree, parent of v is v less its lowest bit
    # (build_in_order_bmtree), as synth's binomial reduce, gather and scatter.
    Algorithm("reduce", "binomial", 5, "binomial"),
    Algorithm("gather", "binomial", 2, "binomial"),
    Algorithm("scatter", "binomial", 2, "binomial"),
    # reduce_scatter 2: recursive halving, distance P/2 first (power of two P; synth's rd-b reduce-scatter).
    Algorithm("reduce-scatter", "rd-b", 2, "recursive_halving"),
    # reduce_scatter 3: P - 1 steps around the ring r -> r + 1.
    Algorithm("reduce-scatter", "ring", 3, "ring", rank_ring=True),
)


def collective_id(collective: str) -> int:
    """coll_tuned's COLLTYPE id of synth's `collective`; one line when it has none here."""
    for name, _, number in COLLECTIVES:
        if name == collective:
            return number
    raise SynthError(f"{collective} has no coll_tuned dynamic rules here (known: "
                     f"{', '.join(name for name, _, _ in COLLECTIVES)})")


def open_mpi_name(collective: str) -> str:
    return next(ompi for name, ompi, _ in COLLECTIVES if name == collective)


def algorithms(collective: str) -> dict[str, Algorithm]:
    """synth's algorithm label -> its coll_tuned algorithm, for `collective`."""
    return {a.label: a for a in ALGORITHMS if a.collective == collective}


@dataclass(frozen=True)
class Rule:
    """From `message_size` bytes on (until the next rule), coll_tuned runs `algorithm`."""

    message_size: int
    algorithm: int
    faninout: int = 0  # 0: coll_tuned's own fan-in/out (only trees read it)
    segsize: int = 0  # 0: not segmented
    note: str = ""  # a comment written after the rule


@dataclass(frozen=True)
class CollectiveRules:
    """One collective's rules for one communicator size."""

    collective_id: int
    comm_size: int
    rules: tuple[Rule, ...]
    note: str = ""  # a comment line before the collective


def _check(collectives: list[CollectiveRules]) -> None:
    ids = [c.collective_id for c in collectives]
    if len(set(ids)) != len(ids):
        raise SynthError(f"coll_tuned rules: collective ids {ids} repeat")
    for c in collectives:
        sizes = [r.message_size for r in c.rules]
        if not sizes or sizes[0] != 0:
            raise SynthError(f"coll_tuned rules: collective {c.collective_id}'s first rule must be for message size 0")
        if any(b <= a for a, b in zip(sizes, sizes[1:])):
            raise SynthError(f"coll_tuned rules: collective {c.collective_id}'s message sizes {sizes} do not increase")
        if c.comm_size < 1 or any(r.algorithm < 1 or r.faninout < 0 or r.segsize < 0 for r in c.rules):
            raise SynthError(f"coll_tuned rules: collective {c.collective_id} has a communicator size below 1, an "
                             "algorithm below 1 or a negative fan-in/out or segment size")


def _comment(text: str) -> str:
    return f"  # {text}" if text else ""


def write_rules(collectives: list[CollectiveRules], header: str = "") -> str:
    """The rules file's text: one number or one rule a line, comments after '#' (coll_tuned skips them)."""
    _check(collectives)
    lines = [f"# {line}" for line in header.splitlines()]
    lines.append(f"{len(collectives)}  # collectives")
    for c in collectives:
        if c.note:
            lines.append(f"# {c.note}")
        lines.append(f"{c.collective_id}  # collective id")
        lines.append("1  # communicator sizes")
        lines.append(f"{c.comm_size} {len(c.rules)}  # communicator size, message sizes")
        for r in c.rules:
            lines.append(f"{r.message_size} {r.algorithm} {r.faninout} {r.segsize}" + _comment(r.note))
    return "\n".join(lines) + "\n"


def read_rules(text: str, where: str = "rules file") -> list[CollectiveRules]:
    """The file's collectives (notes dropped), read as coll_tuned reads it: integers, '#' to the end
    of the line skipped. One line (SynthError) on what coll_tuned would refuse."""
    numbers = []
    for number, line in enumerate(text.splitlines(), 1):
        for word in line.split("#", 1)[0].split():
            try:
                numbers.append(int(word, 10))
            except ValueError:
                raise SynthError(f"{where}: line {number}: {word!r} is not a decimal integer") from None
    position = 0

    def take(what: str) -> int:
        nonlocal position
        if position == len(numbers):
            raise SynthError(f"{where}: ends before {what}")
        value = numbers[position]
        position += 1
        if value < 0:
            raise SynthError(f"{where}: {what} {value} is negative")
        return value

    found = []
    for _ in range(take("the number of collectives")):
        collective = take("a collective id")
        for _ in range(take("the number of communicator sizes")):
            comm_size = take("a communicator size")
            rules = tuple(Rule(take("a message size"), take("an algorithm"), take("a fan-in/out"), take("a segment size"))
                          for _ in range(take("the number of message sizes")))
            found.append(CollectiveRules(collective, comm_size, rules))
    if position != len(numbers):
        raise SynthError(f"{where}: {len(numbers) - position} numbers after the last rule")
    for c in found:  # a collective of several communicator sizes is one entry per size: each checked alone
        _check([c])
    return found
