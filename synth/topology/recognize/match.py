"""Embedding a network's router graph into a family's: the search behind recognition (issue 26).

A fabric is recognized as a family network F when its router graph G maps injectively into F's so that every
channel of G lands on a channel of F (G may lack some of F's links and switches, never have one F lacks). The
search is a depth-first subgraph match in the VF2++ style (Juttner and Madarasi, 2018): the routers of G in a
static order, each next router the one with the most neighbours already ordered, candidates the unused
neighbours of an ordered neighbour's image. What makes it fast on the families' highly symmetric graphs is the
deficit count: G has exactly `budget` fewer router channels than F, and every pair of mapped routers whose F
channels outnumber G's spends that budget, so a wrong choice (which maps non-neighbours onto neighbours) is cut
as soon as its first wrong pair is mapped. An intact fabric has budget 0: the search is then an exact
isomorphism test. The search is bounded (`max_steps` candidate checks): past it the answer is "no embedding
found", never a wrong embedding, since the one returned is verified channel by channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numpy as np

from synth.topology.distances import hop_distances

MAX_STEPS = 400_000  # candidate checks per embedding attempt: about 2 s of this pure-Python search


@dataclass(frozen=True)
class Routers:
    """The routers of a Network and the channels between them, as adjacency with directed multiplicities."""

    nodes: np.ndarray  # (R,) node ids of the routers in the Network
    terminals: np.ndarray  # (R,) terminals attached to each router
    neighbours: list[list[int]]  # router indices adjacent either way, sorted
    channels: list[dict[int, int]]  # channels[u][v]: channels u -> v (directed multiplicity)

    @property
    def size(self) -> int:
        return len(self.nodes)

    @cached_property  # asked once per candidate and test: a sum over every router each time was most of a 10,000-ring's recognition
    def num_channels(self) -> int:
        return sum(sum(c.values()) for c in self.channels)

    @classmethod
    def of(cls, network) -> "Routers":
        n = network.num_terminals
        failed = np.zeros(network.num_nodes, dtype=bool)
        if network.failed_nodes is not None:
            failed[network.failed_nodes] = True
        nodes = np.flatnonzero(~failed[n:]) + n
        index = np.full(network.num_nodes, -1, dtype=np.int64)
        index[nodes] = np.arange(len(nodes))
        src, dst = network.channel_src, network.channel_dst
        live = ~failed[src] & ~failed[dst]
        terminal_side = live & (src < n) & (dst >= n)
        terminals = np.bincount(index[dst[terminal_side]], minlength=len(nodes)).astype(np.int64)
        between = live & (src >= n) & (dst >= n)
        u, v = index[src[between]], index[dst[between]]
        pairs, counts = np.unique(u * len(nodes) + v, return_counts=True)
        channels: list[dict[int, int]] = [{} for _ in nodes]
        adjacent: list[set[int]] = [set() for _ in nodes]
        for key, count in zip(pairs.tolist(), counts.tolist()):
            a, b = divmod(key, len(nodes))
            channels[a][b] = count
            adjacent[a].add(b)
            adjacent[b].add(a)
        return cls(nodes, terminals, [sorted(s) for s in adjacent], channels)


def adjacency(graph: Routers):
    """The routers' adjacency either way, as a scipy CSR matrix of ones (int64)."""
    from scipy.sparse import coo_matrix
    rows = [u for u, near in enumerate(graph.neighbours) for _ in near]
    cols = [v for near in graph.neighbours for v in near]
    return coo_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(graph.size, graph.size)).tocsr()


def distances(graph: Routers) -> np.ndarray:
    """(R, R) router hops either way (int16; 32767 where unreachable): synth.topology.distances' compiled BFS."""
    matrix = adjacency(graph)
    hops = hop_distances(matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64), graph.size)
    hops[hops < 0] = np.iinfo(np.int16).max
    return hops


def _channel_totals(graph: Routers) -> tuple[np.ndarray, np.ndarray]:
    """(channels out, channels in) of every router."""
    out = np.array([sum(c.values()) for c in graph.channels], dtype=np.int64)
    into = np.zeros(graph.size, dtype=np.int64)
    for c in graph.channels:
        for v, count in c.items():
            into[v] += count
    return out, into


def common_neighbours(graph: Routers) -> np.ndarray:
    """(R, R) routers adjacent to both (int16)."""
    matrix = adjacency(graph)
    return (matrix @ matrix).toarray().astype(np.int16)


def search_order(graph: Routers, first: int) -> list[int]:
    """Routers from `first`, each next the unordered one with the most ordered neighbours (ties: most neighbours,
    then lowest index): every router after the first has an ordered neighbour in a connected graph."""
    import heapq
    placed = np.zeros(graph.size, dtype=bool)
    links = np.zeros(graph.size, dtype=np.int64)
    degree = [len(x) for x in graph.neighbours]
    heap = [(0, -degree[first], first)]
    order = []
    while heap:
        _, _, v = heapq.heappop(heap)
        if placed[v]:
            continue
        placed[v] = True
        order.append(v)
        for w in graph.neighbours[v]:
            if not placed[w]:
                links[w] += 1
                heapq.heappush(heap, (-int(links[w]), -degree[w], w))
    return order


def embed(fabric: Routers, family: Routers, first: int | None = None, max_steps: int = MAX_STEPS,
          starts: list[int] | None = None) -> tuple[np.ndarray | None, int]:
    """(an injective map of fabric routers to family routers carrying every fabric channel onto family channels,
    terminals no more than the family's, or None; candidate checks spent). `starts`: the family routers tried for
    the first fabric router (default: every router with enough terminals and neighbours whose balls fit)."""
    budget = family.num_channels - fabric.num_channels
    terminal_budget = int(family.terminals.sum() - fabric.terminals.sum())
    if budget < 0 or terminal_budget < 0 or fabric.size > family.size:
        return None, 0
    exact = budget == 0 and fabric.size == family.size
    d_g, d_f = distances(fabric), distances(family)
    c_g, c_f = common_neighbours(fabric), common_neighbours(family)
    degree_g = [len(x) for x in fabric.neighbours]
    degree_f = [len(x) for x in family.neighbours]
    if first is None:
        first = max(range(fabric.size), key=lambda v: (degree_g[v], -v))
    order = search_order(fabric, first)
    if len(order) < fabric.size:
        return None, 0  # in pieces
    position = np.empty(fabric.size, dtype=np.int64)
    position[order] = np.arange(len(order))
    # the ordered neighbour whose image's neighbours are the candidates: the earliest placed one
    anchor = [min((w for w in fabric.neighbours[v] if position[w] < position[v]), key=lambda w: position[w],
                  default=-1) for v in order]
    mapped = [-1] * fabric.size  # fabric -> family
    owner = [-1] * family.size  # family -> fabric
    g_ch, f_ch = fabric.channels, family.channels
    g_term, f_term = fabric.terminals.tolist(), family.terminals.tolist()
    order_array = np.array(order, dtype=np.int64)
    image = np.full(fabric.size, -1, dtype=np.int64)
    out_g, in_g = _channel_totals(fabric)
    out_f, in_f = _channel_totals(family)
    full = np.zeros(fabric.size, dtype=bool)  # mapped routers that lack no channel of their image
    steps = 0

    def deficit(v: int, u: int, depth: int) -> int:
        """The channels F has and G lacks between v (as u) and the mapped routers; -1 where G has one F lacks, or
        where the routers' distances or common neighbours say the map is wrong. G's channels all lie on F's, so
        F's distances are at most G's and G's common neighbours at most F's. Between two routers that lack no
        channel ("full", as in an intact fabric) they are equal up to two hops, and so are their channels."""
        nonlocal steps
        steps += 1
        if g_term[v] > f_term[u] or degree_g[v] > degree_f[u] or out_g[v] > out_f[u] or in_g[v] > in_f[u]:
            return -1
        done = order_array[:depth]
        near_g, near_f = d_g[v, done], d_f[u, image[done]]
        common_g, common_f = c_g[v, done], c_f[u, image[done]]
        if exact:
            if (near_g != near_f).any() or (common_g != common_f).any():
                return -1
        else:
            if (near_g < near_f).any() or (common_g > common_f).any():
                return -1
            if out_g[v] == out_f[u] and in_g[v] == in_f[u]:
                both = full[done] & (near_f <= 2)
                if (near_g[both] != near_f[both]).any() or (common_g[both] != common_f[both]).any():
                    return -1
        spent = 0
        for x in family.neighbours[u]:
            w = owner[x]
            if w < 0:
                continue
            lacking = f_ch[u].get(x, 0) - g_ch[v].get(w, 0) + f_ch[x].get(u, 0) - g_ch[w].get(v, 0)
            if lacking and full[w] and out_g[v] == out_f[u] and in_g[v] == in_f[u]:
                return -1
            spent += lacking
        for w in fabric.neighbours[v]:  # every mapped fabric neighbour must sit on a family neighbour
            x = mapped[w]
            if x >= 0 and (f_ch[u].get(x, 0) < g_ch[v].get(w, 0) or f_ch[x].get(u, 0) < g_ch[w].get(v, 0)):
                return -1
        return spent

    if starts is None:
        starts = [u for u in range(family.size) if f_term[u] >= g_term[first] and degree_f[u] >= degree_g[first]]
    # the routers within k hops of the first router map into those within k hops of its image, for every k
    balls_g = np.cumsum(np.bincount(np.minimum(d_g[first], family.size), minlength=family.size + 1))
    fits = []
    for u in starts:
        balls_f = np.cumsum(np.bincount(np.minimum(d_f[u], family.size), minlength=family.size + 1))
        if (balls_g == balls_f).all() if exact else (balls_g <= balls_f).all():
            fits.append(u)
    starts = fits
    candidates: list[list[int]] = [[] for _ in order]
    spent_at = [0] * (len(order) + 1)
    terminals_at = [0] * (len(order) + 1)
    candidates[0] = list(reversed(starts))
    depth = 0
    while depth >= 0:
        v = order[depth]
        if mapped[v] >= 0:  # undo the previous choice at this depth
            owner[mapped[v]] = -1
            mapped[v] = image[v] = -1
        placed = False
        while candidates[depth]:
            u = candidates[depth].pop()
            if owner[u] >= 0:
                continue
            spent = deficit(v, u, depth)
            terminals = terminals_at[depth] + f_term[u] - g_term[v]
            if spent < 0 or spent_at[depth] + spent > budget or terminals > terminal_budget:
                continue
            mapped[v], owner[u] = u, v
            image[v] = u
            full[v] = out_g[v] == out_f[u] and in_g[v] == in_f[u]
            spent_at[depth + 1] = spent_at[depth] + spent
            terminals_at[depth + 1] = terminals
            placed = True
            break
        if steps > max_steps:
            return None, steps
        if not placed:
            depth -= 1
            continue
        depth += 1
        if depth == len(order):
            return np.array(mapped, dtype=np.int64), steps
        a = anchor[depth]
        candidates[depth] = [x for x in reversed(family.neighbours[mapped[a]]) if owner[x] < 0]
    return None, steps


# ----- isomorphism by individualization and refinement -------------------------------------------------------------
# An intact fabric is an isomorphic copy of its family's router graph. Colour refinement (1-WL) on the two graphs
# together, then individualizing one router of a smallest colour class with each candidate of the family's, the
# practical method of nauty and bliss (McKay and Piperno, 2014), pins these graphs down after a few
# individualizations: their symmetry makes first choices equivalent, and a wrong later choice shows at once as
# colour classes of different sizes in the two graphs.

MAX_WORK = 60_000_000  # router-rounds of refinement per isomorphism test (some 30 s of numpy) before giving up


def _channel_arrays(graph: Routers, offset: int) -> tuple[np.ndarray, np.ndarray]:
    src = [u for u, out in enumerate(graph.channels) for v, count in out.items() for _ in range(count)]
    dst = [v for out in graph.channels for v, count in out.items() for _ in range(count)]
    return np.array(src, dtype=np.int64) + offset, np.array(dst, dtype=np.int64) + offset


class _Refiner:
    """Colour refinement of the disjoint union of a fabric's router graph (vertices 0..R-1) and a family's
    (R..2R-1): a colour is a class of routers no refinement told apart, in either graph."""

    def __init__(self, fabric: Routers, family: Routers):
        self.size = fabric.size
        g_src, g_dst = _channel_arrays(fabric, 0)
        f_src, f_dst = _channel_arrays(family, fabric.size)
        self.src, self.dst = np.concatenate([g_src, f_src]), np.concatenate([g_dst, f_dst])
        rng = np.random.default_rng(20261129)  # fixed: byte-identical reruns
        self.out_key = rng.integers(1, 1 << 62, size=2 * self.size + 1, dtype=np.uint64)
        self.in_key = rng.integers(1, 1 << 62, size=2 * self.size + 1, dtype=np.uint64)
        has_terminals = np.concatenate([fabric.terminals > 0, family.terminals > 0])
        self.start = np.unique(has_terminals.astype(np.int64), return_inverse=True)[1].astype(np.int64)

    work = 0  # router-rounds of refinement done, the searches' budget

    def refine(self, colour: np.ndarray) -> np.ndarray | None:
        """The stable refinement of `colour`, numbered by first appearance in the sorted keys (so equal in
        both graphs), or None when the two graphs' classes differ in size (no isomorphism respects it)."""
        classes = len(np.unique(colour))
        while True:
            self.work += 2 * self.size
            out_sum = np.zeros(2 * self.size, dtype=np.uint64)
            in_sum = np.zeros(2 * self.size, dtype=np.uint64)
            np.add.at(out_sum, self.src, self.out_key[colour[self.dst]])
            np.add.at(in_sum, self.dst, self.in_key[colour[self.src]])
            keys = np.stack([colour.astype(np.uint64), out_sum, in_sum], axis=1)
            _, colour = np.unique(keys, axis=0, return_inverse=True)
            colour = colour.ravel().astype(np.int64)
            left = np.bincount(colour[: self.size], minlength=colour.max() + 1)
            right = np.bincount(colour[self.size:], minlength=colour.max() + 1)
            if (left != right).any():
                return None
            if len(left) == classes:
                return colour
            classes = len(left)


def isomorphism(fabric: Routers, family: Routers, transitive: bool = False,
                max_work: int = MAX_WORK) -> np.ndarray | None:
    """fabric router -> family router, an isomorphism of the router graphs (directed channel multiplicities and
    which routers have terminals preserved), or None (none exists, or none was found within max_work router-rounds
    of refinement). `transitive`: the family's automorphisms take any router to any other, so the first router
    individualized needs one image only: if that fails, every other would."""
    if fabric.size != family.size or fabric.num_channels != family.num_channels:
        return None
    walked = _cycle_isomorphism(fabric, family)
    if walked is not False:  # both cycles: walked in linear time (refinement takes R / 2 rounds of R on one)
        return walked
    refiner = _Refiner(fabric, family)
    size = fabric.size
    root = refiner.refine(refiner.start)
    if root is None:
        return None
    stack: list[tuple[np.ndarray, int, list[int]]] = []

    def branch(colour: np.ndarray):
        """(colour, fabric router to individualize, family routers to try) for the first smallest class."""
        counts = np.bincount(colour[:size])
        split = np.flatnonzero(counts > 1)
        if not len(split):
            return None
        target = split[np.argmax(counts[split])]  # the largest class: bliss's "first largest" cell rule
        v = int(np.flatnonzero(colour[:size] == target)[0])
        return colour, v, (np.flatnonzero(colour[size:] == target)[::-1]).tolist()

    colour = root
    node = branch(colour)
    if node is None:
        return _verified(fabric, family, colour)
    if transitive and len(np.unique(root)) == 1:
        node = (node[0], node[1], node[2][-1:])
    stack.append(node)
    while stack:
        colour, v, options = stack[-1]
        if not options:
            stack.pop()
            continue
        u = options.pop()
        if refiner.work > max_work:
            return None
        trial = colour.copy()
        fresh = colour.max() + 1
        trial[v], trial[size + u] = fresh, fresh
        refined = refiner.refine(trial)
        if refined is None:
            continue
        node = branch(refined)
        if node is None:
            found = _verified(fabric, family, refined)
            if found is not None:
                return found
            continue
        stack.append(node)
    return None


def _cycle_order(graph: Routers) -> list[int] | None:
    """The routers in their order around the cycle, where the router graph is one (every router joined to two
    others by one channel each way, all of them reached from router 0); else None."""
    if graph.size < 3 or any(len(near) != 2 for near in graph.neighbours):
        return None
    if any(len(out) != 2 or any(count != 1 for count in out.values()) for out in graph.channels):
        return None
    order, previous, at = [0], -1, 0
    for _ in range(graph.size - 1):
        a, b = graph.neighbours[at]
        previous, at = at, (b if a == previous else a)
        if at == 0:
            return None  # a shorter cycle: not connected
        order.append(at)
    return order if 0 in graph.neighbours[at] else None


def _cycle_isomorphism(fabric: Routers, family: Routers):
    """An isomorphism of two cycles walked side by side (the cheap invariants first: every degree two, one cycle),
    None where both are cycles but no rotation or reflection keeps which routers have terminals, and False where
    either is no cycle (the general search decides). Rotations are tried only where terminals differ along the
    cycle, at the positions whose terminal pattern starts alike: linear for the usual uniform case."""
    mine, theirs = _cycle_order(fabric), _cycle_order(family)
    if mine is None or theirs is None:
        return False
    size = fabric.size
    has = (fabric.terminals > 0)[mine]
    other = (family.terminals > 0)[theirs]
    if has.sum() != other.sum():
        return None
    uniform = has.all() or not has.any()
    for direction in (theirs, theirs[:1] + theirs[1:][::-1]):
        pattern = (family.terminals > 0)[direction]
        for shift in range(1 if uniform else size):
            if not uniform and not np.array_equal(np.roll(pattern, -shift), has):
                continue
            mapping = np.empty(size, dtype=np.int64)
            mapping[mine] = np.roll(np.asarray(direction, dtype=np.int64), -shift)
            if _verified_map(fabric, family, mapping):
                return mapping
    return None


def _verified_map(fabric: Routers, family: Routers, mapping: np.ndarray) -> bool:
    """Whether fabric router v -> family router mapping[v] carries every channel exactly."""
    for v in range(fabric.size):
        u = int(mapping[v])
        if len(fabric.channels[v]) != len(family.channels[u]):
            return False
        for w, count in fabric.channels[v].items():
            if family.channels[u].get(int(mapping[w]), 0) != count:
                return False
    return True


def _verified(fabric: Routers, family: Routers, colour: np.ndarray) -> np.ndarray | None:
    """The map a discrete colouring gives, if it carries every channel exactly (a check against hash collisions)."""
    size = fabric.size
    where = np.empty(colour.max() + 1, dtype=np.int64)
    where[colour[size:]] = np.arange(size)
    mapping = where[colour[:size]]
    for v in range(size):
        u = int(mapping[v])
        if len(fabric.channels[v]) != len(family.channels[u]):
            return None
        for w, count in fabric.channels[v].items():
            if family.channels[u].get(int(mapping[w]), 0) != count:
                return None
    return mapping


# ----- completion: the isomorphism test on a fabric with a few links (or one switch) added back ------------------

MAX_COMPLETIONS = 1024  # completed fabrics tested per family network (each a few milliseconds, unless it could fit)
MAX_COMPLETED_LINKS = 8  # missing links put back at most (beyond a missing switch's): 2,027,025 pairings of 16 ends


def local_invariants(graph: Routers) -> np.ndarray:
    """(R, 4) rows (has terminals, channels out, triangles, routers within two hops) in sorted order: equal for
    isomorphic graphs, and cheap, so a completion that cannot be the family is dropped before any search."""
    from scipy.sparse import identity
    matrix = adjacency(graph)
    square = matrix @ matrix
    triangles = np.asarray(square.multiply(matrix).sum(axis=1)).ravel()
    ball = np.diff(((square + matrix + identity(graph.size, dtype=np.int64, format="csr")) > 0).tocsr().indptr)
    out = np.array([sum(c.values()) for c in graph.channels], dtype=np.int64)
    table = np.stack([graph.terminals > 0, out, triangles, ball], axis=1).astype(np.int64)
    return table[np.lexsort(table.T[::-1])]


def completions(fabric: Routers, family: Routers, limit: int = MAX_COMPLETIONS):
    """Fabrics with the missing links (and at most one missing switch) put back, as the family's degrees say they
    must be: each router's missing channels are the family's degree for its kind (with or without terminals) less
    its own, and every way of pairing those up (no router to itself, no pair beyond the family's most parallel
    channels) is one completion. Two-way channels only; nothing when a kind's degree is not one number."""
    missing_switches = family.size - fabric.size
    if missing_switches > 1 or fabric.size == 0:
        return
    if family.num_channels - fabric.num_channels > 2 * (MAX_COMPLETED_LINKS + missing_switches * max(
            (sum(c.values()) for c in family.channels), default=0)):
        return  # more links missing than pairings can be tried
    out_f = np.array([sum(c.values()) for c in family.channels], dtype=np.int64)
    expected = {}
    for kind in (True, False):
        degrees = np.unique(out_f[(family.terminals > 0) == kind])
        if len(degrees) > 1:
            return
        if len(degrees):
            expected[kind] = int(degrees[0])
    out_g = np.array([sum(c.values()) for c in fabric.channels], dtype=np.int64)
    want = np.array([expected.get(bool(t > 0), -1) for t in fabric.terminals], dtype=np.int64)
    deficit = want - out_g
    if (want < 0).any() or (deficit < 0).any():
        return
    most_parallel = max((count for c in family.channels for count in c.values()), default=1)
    kind_pairs = {(bool(family.terminals[u] > 0), bool(family.terminals[v] > 0))  # the kinds a family link joins
                  for u, c in enumerate(family.channels) for v in c}
    stubs = [v for v in range(fabric.size) for _ in range(int(deficit[v]))]
    new_kinds = [kind for kind in expected  # the kind of router the family has one more of
                 if ((family.terminals > 0) == kind).sum() - ((fabric.terminals > 0) == kind).sum() == 1]
    if missing_switches and (len(new_kinds) != 1 or expected[new_kinds[0]] > len(set(stubs))):
        return
    made = 0

    def pairings(left: list[int], chosen: list[tuple[int, int]]):
        if not left:
            yield chosen
            return
        first, rest = left[0], left[1:]
        tried = set()
        for i, other in enumerate(rest):
            if other == first or other in tried:
                continue
            tried.add(other)
            pair = (first, other)
            if (bool(fabric.terminals[first] > 0), bool(fabric.terminals[other] > 0)) not in kind_pairs:
                continue
            if fabric.channels[first].get(other, 0) + chosen.count(pair) + chosen.count((other, first)) >= most_parallel:
                continue
            yield from pairings(rest[:i] + rest[i + 1:], chosen + [pair])

    if missing_switches:
        kind = new_kinds[0]
        terminals = int(family.terminals[(family.terminals > 0) == kind].max(initial=0))
        attachments = map(list, combinations(sorted(set(stubs)), expected[kind]))  # lazily: made counts them
    else:
        attachments, terminals = iter([[]]), 0
    for attached in attachments:
        left = list(stubs)
        for v in attached:
            left.remove(v)
        for pairs in pairings(left, []):
            if made >= limit:
                return
            made += 1
            size = fabric.size + missing_switches
            channels = [dict(c) for c in fabric.channels] + [{} for _ in range(missing_switches)]
            for u, v in pairs + [(size - 1, v) for v in attached]:
                channels[u][v] = channels[u].get(v, 0) + 1
                channels[v][u] = channels[v].get(u, 0) + 1
            neighbours = [sorted(c) for c in channels]  # two-way channels: out-neighbours are all neighbours
            yield Routers(np.concatenate([fabric.nodes, np.full(missing_switches, -1)]),
                          np.concatenate([fabric.terminals, np.full(missing_switches, terminals)]),
                          neighbours, channels)
