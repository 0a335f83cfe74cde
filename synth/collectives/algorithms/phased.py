"""The phased all-to-alls of Prisacari20 as schedules: phase p of the exchange is step p, in which every
rank s sends its block for d = dst(s, p) straight to d (Prisacari20 sec. 2.2 LIN and XOR, eq. 2.4 OPT,
eq. 4.2-4.4 GHE, 4.7-4.9 BGH, ch.4's LAT for dragonflies), the patterns `synth route --traffic`
takes. A rank's block for itself stays (no transfer); the N phases deliver every block once."""

from __future__ import annotations

from synth.collectives.algorithms import Algorithm, Request, one_transfer_per_block
from synth.topology import parse_topology
from synth.traffic.patterns import parse_pattern

PATTERNS = ("a2a-lin", "a2a-xor", "a2a-opt", "a2a-ghe", "a2a-bgh", "a2a-lat")


def _workload(request: Request, pattern: str):
    topology = parse_topology(request.spec)
    return parse_pattern(pattern, request.ranks, topology.hierarchy(), topology=topology)


def _generator(pattern: str):
    def generate(request: Request):
        p = request.ranks
        workload = _workload(request, pattern)
        builder = request.builder(pattern)
        phases = workload.phase_numbers
        idx, src, dst, _ = workload.batch(phases)
        for i in range(len(phases)):
            mine = (idx == i) & (src != dst)
            if mine.any():
                builder.add_step(src[mine], dst[mine], (src[mine] * p + dst[mine])[:, None])
        return builder.build()
    return generate


def _refusal(pattern: str):
    def refusal(request: Request) -> str | None:
        from synth.core.errors import SynthError

        try:
            workload = _workload(request, pattern)
        except SynthError as exc:
            return str(exc).splitlines()[0]
        if not workload.is_all_to_all:
            return f"{pattern} is not an all-to-all exchange here"
        return None
    return refusal


ALGORITHM = tuple(Algorithm(name, ("alltoall", "alltoallv"), f"the phased exchange {name} (Prisacari20): phase p is step p",
                            _generator(name), _refusal(name), transfers=one_transfer_per_block, direct=True)
                  for name in PATTERNS)
