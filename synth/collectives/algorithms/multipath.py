"""Point to point on K(d,2) (Pham26 ch.3): `kautz-mp` splits the message over edge-disjoint paths of at
most three hops and relays it hop by hop (three steps), `single-path` relays it whole along the
shortest path (one step per hop, store and forward: Pham26's baseline t (alpha + M beta)).

Node xy (letters 0..d, x != y; ranks numbered as synth.topology.kautz numbers the words). From xy:
- type 1, to zt with z != y (distance 2): the shortest path xy yz zt and, for every letter k other
  than y and z, xy yk kz zt: d paths;
- type 2, to yx: the link and, for every k other than x and y, xy yk ky yx: d paths;
- type 3, to yz with z != x: the link and, for every k other than x, y and z, xy yk ky yz: d - 1 paths.
The message is split evenly (Pham26: T_mp = 3 (alpha + M/d beta), type 3 3 (alpha + M/(d-1) beta))."""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.kautz import kautz_refusal
from synth.topology import parse_topology
from synth.topology.kautz import Kautz


def kautz_paths(source: int, target: int, d: int) -> list[list[int]]:
    """The edge-disjoint paths (rank sequences) from source to target."""
    kautz = Kautz(d, 2)
    (x, y), (z, t) = kautz.words()[[source, target]].tolist()
    letters = range(d + 1)
    if z != y:  # type 1
        shortest = [(x, y), (y, z), (z, t)]
        others = [[(x, y), (y, k), (k, z), (z, t)] for k in letters if k not in (y, z)]
    elif t == x:  # type 2
        shortest = [(x, y), (y, x)]
        others = [[(x, y), (y, k), (k, y), (y, x)] for k in letters if k not in (x, y)]
    else:  # type 3
        shortest = [(x, y), (y, t)]
        others = [[(x, y), (y, k), (k, y), (y, t)] for k in letters if k not in (x, y, t)]
    return [kautz.word_index(path).tolist() for path in [shortest] + others]


def _relay(builder, paths: list[list[int]], blocks: list[np.ndarray]) -> None:
    """Hop h of every path in step h, each path carrying its blocks."""
    for hop in range(max(len(p) for p in paths) - 1):
        live = [(p, b) for p, b in zip(paths, blocks) if hop + 1 < len(p)]
        builder.add_step([p[hop] for p, _ in live], [p[hop + 1] for p, _ in live], [b for _, b in live])


def generate_multipath(request: Request):
    d = parse_topology(request.spec).d
    paths = kautz_paths(request.root, request.peer, d)
    builder = request.builder("kautz-mp")
    _relay(builder, paths, np.array_split(np.arange(request.blocks), len(paths)))
    return builder.build()


def generate_single(request: Request):
    d = parse_topology(request.spec).d
    builder = request.builder("single-path")
    _relay(builder, [kautz_paths(request.root, request.peer, d)[0]], [np.arange(request.blocks)])
    return builder.build()


def paths_count(request: Request) -> int:
    """Blocks by default: one per path (1 where the algorithm does not apply: its refusal says why)."""
    d = parse_topology(request.spec).kautz_degree()
    if d is None or request.peer is None or request.peer == request.root:
        return 1
    return len(kautz_paths(request.root, request.peer, d))


def _refusal(name: str):
    base = kautz_refusal(name)

    def refusal(request: Request) -> str | None:
        found = base(request)
        if found is None and (request.peer is None or request.peer == request.root):
            return f"{name} sends from --root to --peer: give a --peer other than the root"
        return found
    return refusal


ALGORITHM = (
    Algorithm("kautz-mp", ("p2p",), "Kautz K(d,2) multi-path point to point: the message split over d (d - 1) "
              "edge-disjoint paths of at most three hops", generate_multipath, _refusal("kautz-mp"), paths_count),
    Algorithm("single-path", ("p2p",), "Kautz K(d,2) point to point along the shortest path, store and forward",
              generate_single, _refusal("single-path"), lambda request: 1),
)
