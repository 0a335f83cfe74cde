"""Orbit schedules: a schedule stored as one rank's blocks and the group that moves them to every
other rank (issue 43 item 1: a 65,536-rank allgather is 4.3 x 10^9 block deliveries, more than
memory holds as explicit arrays).

The network's translations (synth.topology.translations: a torus's or HyperX's unit shifts) act
simply transitively on its terminals: one element g_r per rank, moving rank 0 to rank r. An orbit
schedule lists the deliveries of rank 0's blocks only, (step, sender, receiver, chunk, op) with
the channels each crosses; the whole schedule is their images: element g_r makes, of every listed
delivery, the delivery (step, g_r(sender), g_r(receiver)) of block chunk x P + r along the moved
channels, and the deliveries of one step between the same two ranks are one transfer (a combined
message), as every schedule's are (synth.collectives.schedule).

Verified on the orbit (`verify_orbit`): blocks never interact in the replay (each block's verdict
depends only on the transfers that carry it), and g_r maps the transfers carrying block c x P
onto those carrying block c x P + r, preserving what the collective promises (allgather: block
c x P + r starts at rank r and ends at every rank; reduce-scatter: it ends reduced at rank r).
So the whole schedule delivers exactly when rank 0's blocks do, replayed by synth's own verifier
(synth.collectives.verify, `only` those blocks) on the transfers that carry them. What the
representative's transfers cannot show, checked too: every path joins its transfer's nodes, and
deliveries of one message orbit (one step, one displacement between the ranks) take paths that
the group maps onto each other, so that each transfer of the whole schedule has one path.

Priced on the orbit (synth.pricing.orbit_cost): per step, a channel of orbit O carries |G| / |O|
times the representative's bytes over O, and a port the messages of the message orbits starting
in its orbit, |G| / |O| each. A test expands small orbit schedules (`expand`) and finds the same
verdict, loads and cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from synth.collectives.schedule import COPY, REDUCE, Schedule, ScheduleBuilder
from synth.core.errors import SynthError
from synth.topology.paths import Paths

ORBIT_COLLECTIVES = ("allgather", "reduce-scatter", "allreduce")
MAX_EXPANDED_DELIVERIES = 1 << 28  # an orbit schedule expanded to explicit arrays: 2.7 x 10^8 deliveries (~100 GB
# at the translated synthesis' 400 B each would not fit; this is the expansion's own guard, about 40 B per delivery)
EXPANDED_BYTES_PER_DELIVERY = 48


@dataclass
class OrbitSchedule:
    collective: str  # allgather | reduce-scatter | allreduce
    algorithm: str
    spec: str
    ranks: int
    chunks: int  # blocks per rank: the whole schedule's blocks are chunk x ranks + rank
    chunk_bytes: np.ndarray  # (chunks,) int64: the size of block chunk x ranks + r, every r
    steps: int
    step: np.ndarray  # per delivery of rank 0's blocks (int64 arrays, sorted by step)
    src: np.ndarray
    dst: np.ndarray
    chunk: np.ndarray
    op: np.ndarray  # COPY | REDUCE
    paths: Paths  # per delivery, the channels its transfer crosses
    group: str = "translations"  # the group: the family's symmetries (synth.topology.translations)
    synthesis: dict | None = None  # the synthesis record, as an explicit schedule's
    network_sha256: str | None = None
    origin: np.ndarray | None = None  # per delivery, the representative whose block (chunk x P + origin) it carries
    representatives: np.ndarray | None = None  # the ranks whose blocks are listed: the least of each rank orbit
    _group: object = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.origin is None:  # one representative, rank 0 (a torus's, a HyperX's)
            self.origin = np.zeros(len(self.step), dtype=np.int64)
        if self.representatives is None:
            self.representatives = np.zeros(1, dtype=np.int64)

    @property
    def blocks(self) -> int:
        return self.chunks * self.ranks

    @property
    def num_steps(self) -> int:
        return self.steps

    @property
    def num_deliveries(self) -> int:
        return len(self.step)

    @property
    def order(self) -> int:
        """|G|: the images of each listed delivery (the group acts freely on the ranks)."""
        return self.ranks // max(1, len(self.representatives))

    @property
    def expanded_deliveries(self) -> int:
        return self.num_deliveries * self.order

    def listed_blocks(self) -> np.ndarray:
        """The blocks whose deliveries are listed: every chunk of every representative."""
        return (np.arange(self.chunks, dtype=np.int64)[:, None] * self.ranks + self.representatives[None, :]).ravel()

    def translation_group(self, topology):
        """The group as arithmetic, checked to move rank 0 onto every rank exactly once."""
        if self._group is None:
            self._group = orbit_group(topology, self.ranks)
        return self._group


def orbit_group(topology, ranks: int):
    """The group of `topology`'s symmetries where it acts freely on its `ranks` terminals (one rank
    per terminal), else one line of why not."""
    from synth.topology.translations import translation_group

    group, why = translation_group(topology)
    if group is None:
        raise SynthError(f"an orbit schedule needs translations acting on the ranks: {why}")
    network = topology.network()
    if ranks != network.num_terminals:
        raise SynthError(f"an orbit schedule has one rank per terminal: {topology.spec} has {network.num_terminals}, "
                         f"the schedule {ranks}")
    terminals = np.arange(ranks, dtype=np.int64)
    rows = group.lookup.reshape(-1, group.order)[np.unique(group.orbit_of[terminals])]
    if (rows >= ranks).any() or not group.free_on(terminals):
        raise SynthError(f"the translations of {topology.spec} ({group.order:,} elements) fix a terminal or move one "
                         "onto a router: no orbit schedule")
    classes, _ = group.channel_classes
    bandwidth = network.channel_bandwidth
    first = np.zeros(classes.max() + 1, dtype=bandwidth.dtype)
    first[classes] = bandwidth
    if not np.array_equal(first[classes], bandwidth):
        raise SynthError(f"the translations of {topology.spec} move channels onto channels of other bandwidths")
    return group


def message_orbits(orbit: OrbitSchedule, group) -> np.ndarray:
    """Per delivery its message orbit's number: deliveries of one step whose (sender, receiver)
    the group moves onto the same pair are, moved by it, the same transfers. The pair's image
    with its sender moved to its orbit's base names the orbit (one element does: a free action)."""
    home = group.move_nodes(-group.exponents[orbit.src], orbit.dst)
    nodes = group.network.num_nodes
    key = (orbit.step * nodes + group.move_nodes(-group.exponents[orbit.src], orbit.src)) * nodes + home
    return np.unique(key, return_inverse=True)[1].ravel()


def check_orbit(orbit: OrbitSchedule, topology) -> str | None:
    """What an orbit's arrays must be beyond the replay, or the first thing wrong: ranks, chunks
    and steps in range, paths joining their transfers' nodes, and one path per message orbit."""
    p = orbit.ranks
    n = orbit.num_deliveries
    if any(len(a) != n for a in (orbit.src, orbit.dst, orbit.chunk, orbit.op)) or orbit.paths.num_flows != n:
        return "its delivery arrays differ in length"
    if orbit.chunks < 1 or len(orbit.chunk_bytes) != orbit.chunks or (orbit.chunk_bytes < 0).any():
        return f"{orbit.chunks} chunks with {len(orbit.chunk_bytes)} sizes"
    if n and (np.diff(orbit.step) < 0).any():
        return "its deliveries are not in step order"
    if len(orbit.origin) != n:
        return "its delivery arrays differ in length"
    group = orbit.translation_group(topology)
    bases = group.bases(np.arange(p, dtype=np.int64))
    if not np.array_equal(orbit.representatives, bases):
        return f"its representatives are not the least rank of each rank orbit ({_few(bases)})"
    listed = np.isin(orbit.origin, bases)
    if not listed.all():
        return f"delivery {int(np.argmin(listed))}: its block's rank {int(orbit.origin[np.argmin(listed)])} is not a " \
               "representative"
    for name, values, top in (("step", orbit.step, orbit.steps), ("sender", orbit.src, p), ("receiver", orbit.dst, p),
                              ("chunk", orbit.chunk, orbit.chunks), ("op", orbit.op, 2)):
        bad = (values < 0) | (values >= top)
        if bad.any():
            return f"delivery {int(np.argmax(bad))}: {name} {int(values[np.argmax(bad)])} is not within 0..{top - 1}"
    network = topology.network()
    channels, offsets = orbit.paths.channels, orbit.paths.offsets
    if len(channels) and ((channels < 0) | (channels >= network.num_channels)).any():
        return "a path names a channel the network does not have"
    lengths = np.diff(offsets)
    if (lengths < 1).any():
        return f"delivery {int(np.argmax(lengths < 1))} crosses no channel (one rank per terminal: every transfer does)"
    starts, ends = offsets[:-1], offsets[1:] - 1
    joined = network.channel_dst[channels[:-1]] == network.channel_src[channels[1:]]
    inside = np.ones(len(channels), dtype=bool)
    inside[ends] = False
    wrong = np.flatnonzero(~joined & inside[:-1])
    if len(wrong):
        return f"delivery {int(np.searchsorted(offsets, wrong[0], side='right') - 1)}: its path is not a walk"
    off = (network.channel_src[channels[starts]] != orbit.src) | (network.channel_dst[channels[ends]] != orbit.dst)
    if off.any():
        return f"delivery {int(np.argmax(off))}: its path does not join rank {orbit.src[np.argmax(off)]} to rank " \
               f"{orbit.dst[np.argmax(off)]}"
    # one path per message orbit: every path moved back to its sender's base is its orbit's first one
    back = np.repeat(-group.exponents[orbit.src], lengths, axis=0)
    canonical = group.move_channels(back, channels)
    orbits = message_orbits(orbit, group)
    first = np.full(orbits.max(initial=-1) + 1, -1, dtype=np.int64)
    first[orbits[::-1]] = np.arange(n)[::-1]
    leader = first[orbits]
    same = np.array_equal(lengths, lengths[leader]) and np.array_equal(
        canonical, canonical[Paths(offsets, np.arange(len(channels))).select(leader).channels])
    if not same:
        return "two deliveries of one message orbit (a step, a displacement) take paths the group does not map " \
               "onto each other"
    return None


def representative_schedule(orbit: OrbitSchedule) -> Schedule:
    """The transfers that carry rank 0's blocks, as a schedule of all the collective's blocks
    (blocks chunk x P), one transfer per step and rank pair: what the replay checks."""
    builder = ScheduleBuilder(orbit.collective, orbit.algorithm, orbit.spec, orbit.ranks, orbit.blocks,
                              np.repeat(orbit.chunk_bytes, orbit.ranks))
    block = orbit.chunk * orbit.ranks + orbit.origin
    for s, (src, dst, counts, ids, op) in _steps(orbit.step, orbit.src, orbit.dst, block, orbit.op, orbit.steps,
                                                 orbit.ranks):
        builder.add_step(src, dst, (counts, ids), op=op)
    return builder.build()


def _steps(step, src, dst, block, op, steps: int, ranks: int):
    """Per step (an empty one too), its transfers: deliveries of one (sender, receiver) combined;
    a step's transfers share one op (the orbit schedules' halves never mix them in a step)."""
    key = (step * ranks + src) * ranks + dst
    order = np.argsort(key, kind="stable")
    key, block, op_sorted = key[order], block[order], op[order]
    bounds = np.searchsorted(step[order], np.arange(steps + 1))
    for s in range(steps):
        lo, hi = bounds[s], bounds[s + 1]
        unique, first = np.unique(key[lo:hi], return_index=True)
        counts = np.diff(np.append(first, hi - lo))
        ops = np.unique(op_sorted[lo:hi])
        if len(ops) > 1:
            raise SynthError(f"step {s} of the orbit schedule mixes copies and reductions")
        yield s, ((unique // ranks) % ranks, unique % ranks, counts, block[lo:hi], int(ops[0]) if len(ops) else COPY)


def verify_orbit(orbit: OrbitSchedule, topology):
    """The replay's verdict on the whole schedule, from rank 0's blocks (module docstring):
    synth.collectives.verify.VerifyReport with the whole schedule's counts."""
    from synth.collectives.verify import VerifyReport, verify

    if orbit.collective not in ORBIT_COLLECTIVES:
        raise SynthError(f"an orbit schedule is of {', '.join(ORBIT_COLLECTIVES)}, not {orbit.collective}")
    if orbit.spec != topology.spec:
        raise SynthError(f"the orbit schedule is for {orbit.spec}, not {topology.spec}")
    problem = check_orbit(orbit, topology)
    group = orbit.translation_group(topology)
    counts = VerifyReport(problem, orbit.steps, len(np.unique(message_orbits(orbit, group))) * group.order
                          if problem is None else 0, orbit.expanded_deliveries)
    if problem is not None:
        return counts
    counts.violation = verify(representative_schedule(orbit), only=orbit.listed_blocks()).violation
    return counts


def _few(values: np.ndarray) -> str:
    shown = ", ".join(str(int(v)) for v in values[:4])
    return shown + (f", ... ({len(values)} in all)" if len(values) > 4 else "")


def check_expandable(orbit: OrbitSchedule) -> None:
    """One line where the whole schedule would not fit as explicit arrays."""
    from synth.core import memory

    total = orbit.expanded_deliveries
    need = total * EXPANDED_BYTES_PER_DELIVERY
    if total > MAX_EXPANDED_DELIVERIES or need > memory.budget().bytes:
        raise SynthError(f"the orbit schedule of {orbit.ranks:,} ranks expands to {total:,} block deliveries (about "
                         f"{memory.gib(need)}), more than synth expands (at most {MAX_EXPANDED_DELIVERIES:,} and "
                         f"{memory.budget()} here): use it in its orbit form (synth verify)")


def expand(orbit: OrbitSchedule, topology) -> Schedule:
    """The whole schedule as explicit arrays, with its paths (refused in one line above
    MAX_EXPANDED_DELIVERIES deliveries)."""
    check_expandable(orbit)
    group = orbit.translation_group(topology)
    p = orbit.ranks
    ranks = np.arange(p, dtype=np.int64)
    base = group.move_nodes(-group.exponents[ranks], ranks)  # each rank's representative
    # rank r's deliveries: its representative's, moved by the element taking that one to r
    order = np.argsort(orbit.origin, kind="stable")
    first = np.searchsorted(orbit.origin[order], ranks)
    last = np.searchsorted(orbit.origin[order], ranks, side="right")
    which = [order[first[r]:last[r]] for r in base.tolist()]
    index = np.concatenate(which) if which else np.zeros(0, dtype=np.int64)
    owner = np.repeat(ranks, [len(w) for w in which])
    moves = group.exponents[owner]
    step = orbit.step[index]
    src = group.move_nodes(moves, orbit.src[index])
    dst = group.move_nodes(moves, orbit.dst[index])
    block = orbit.chunk[index] * p + owner
    op = orbit.op[index]
    picked = orbit.paths.select(index)
    lengths = picked.lengths()
    channels = group.move_channels(np.repeat(moves, lengths, axis=0), picked.channels)
    delivery_paths = Paths(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), channels)
    builder = ScheduleBuilder(orbit.collective, orbit.algorithm, orbit.spec, p, orbit.blocks,
                              np.repeat(orbit.chunk_bytes, p))
    # one path per transfer: a transfer's first delivery's (check_orbit: its message orbit's are the same)
    key = (step * p + src) * p + dst
    order = np.argsort(key, kind="stable")
    _, first = np.unique(key[order], return_index=True)
    transfer_paths = delivery_paths.select(order[first])
    for s, (a, b, counts, ids, kind) in _steps(step, src, dst, block, op, orbit.steps, p):
        builder.add_step(a, b, (counts, ids), op=kind)
    schedule = builder.build()
    schedule.paths = transfer_paths
    schedule.synthesis = orbit.synthesis
    schedule.network_sha256 = orbit.network_sha256
    return schedule


__all__ = ["OrbitSchedule", "ORBIT_COLLECTIVES", "COPY", "REDUCE", "check_orbit", "check_expandable", "expand",
           "verify_orbit",
           "representative_schedule", "message_orbits", "orbit_group"]
