"""Extended generalized fat trees XGFT(H; M_1..M_H; W_1..W_H) ([Prisacari20], ch.3.3).

Addressing follows the seed's dual view. A layer-l node is the pair (MT node, WT node):
  * MT index  mt = leaf // Pi_l, the subtree of leaves it serves, Pi_l = M_1*...*M_l
    (leaf digits m_1..m_H in mixed radix, m_1 least significant);
  * WT index  wt = w_1 + w_2*P_1 + ... + w_l*P_{l-1}, P_l = W_1*...*W_l, the up-link choices
    that reach it from below (w_1 least significant).
Its seed coordinates are (l; m_H..m_{l+1}, w_l..w_1). Node id = layer offset + mt*P_l + wt.

With w_1 least significant, the WT index at layer k of a path is choice % P_k where `choice`
is the WT index at the path's top (NCA) layer: one integer per flow names its whole route
(Properties 1-3 of the seed), and destination-mod-k is simply choice = dst % P_delta.

Links of stage k join layers k-1 and k. Link e of stage k is e = mt_{k-1}*P_k + wt_k: the
lower node's MT index (which includes the child digit m_k) and the upper node's WT index
(which includes the up choice w_k) name it uniquely, and both are cheap to compute per flow.
Up channel id = up_offset[k] + e, down channel id = down_offset[k] + e.

Ports: a layer-l switch has down ports 1..M_l (port m_l + 1 leads to child digit m_l) and up
ports M_l+1..M_l+W_{l+1}; a terminal has up ports 1..W_1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod

import numpy as np

from synth.core.errors import SynthError
from synth.core.validate import parse_int, show
from synth.core.intmath import div, mod, mul
from synth.topology.family import FAT_TREE_FORMS, XGFT, Family, Topology
from synth.topology.network import Network

MAX_HEIGHT = 16
MAX_RADIX = 1 << 16  # M or W of one layer


@dataclass(frozen=True)
class Xgft(Topology):
    family = "xgft"
    default_router = "dmodk"  # Prisacari20 sec. 2.3: the fat trees' standard destination-mod-k routing
    routing_kind = XGFT
    compact_routes = True  # a route is its WT index at the NCA layer (Properties 1-3), see hop_matrix
    up_down_routes = True  # every router climbs to a nearest common ancestor and comes down
    bounds_per_stage = True  # the subtree cut bound of every stage (eq. 3.6-3.12)
    reports_seed_exchanges = True  # Prisacari20 ch.3-4's tables: the all-to-all exchanges
    degradable = False  # the routers' addressing (d-mod-k, layered, monolithic) is the intact tree's
    m: tuple[int, ...]  # M_1..M_H: children of a layer-l node
    w: tuple[int, ...]  # W_1..W_H: parents of a layer-(l-1) node

    def __post_init__(self) -> None:
        if len(self.m) != len(self.w):
            raise SynthError(f"XGFT needs as many M values as W values, got {len(self.m)} and {len(self.w)}")
        if not self.m:
            raise SynthError("XGFT needs at least one switch layer")
        for name, values in (("M", self.m), ("W", self.w)):
            for i, v in enumerate(values, start=1):
                if int(v) != v or v < 1:
                    raise SynthError(f"XGFT {name}_{i} must be a positive integer, got {v}")
        self.check_size(self.num_nodes, self.num_channels, terminals="leaves")

    # ----- parameters and counts -------------------------------------------------------------
    @property
    def height(self) -> int:
        return len(self.m)

    @cached_property
    def mt_span(self) -> tuple[int, ...]:
        """Pi_l = M_1*...*M_l for l = 0..H: leaves under a layer-l MT node."""
        return tuple(prod(self.m[:l]) for l in range(self.height + 1))

    @cached_property
    def wt_span(self) -> tuple[int, ...]:
        """P_l = W_1*...*W_l for l = 0..H: XGFT nodes per MT node at layer l, paths to layer l."""
        return tuple(prod(self.w[:l]) for l in range(self.height + 1))

    @property
    def num_leaves(self) -> int:
        return prod(self.m)

    @property
    def num_terminals(self) -> int:
        return self.num_leaves

    @property
    def spec(self) -> str:
        return f"xgft:{self.height}:{','.join(map(str, self.m))}:{','.join(map(str, self.w))}"

    def label(self) -> str:
        return f"XGFT({self.height}; {','.join(map(str, self.m))}; {','.join(map(str, self.w))})"

    def mt_count(self, layer: int) -> int:
        """MT nodes (subtrees) at a layer: M_{l+1}*...*M_H."""
        return self.num_leaves // self.mt_span[layer]

    def switch_count(self, layer: int) -> int:
        """S(l) = W_1*...*W_l * M_{l+1}*...*M_H (sec. 2.4.2); layer 0 counts the leaves."""
        return self.wt_span[layer] * self.mt_count(layer)

    def link_count(self, stage: int) -> int:
        """E(l) = S(l) * M_l: bidirectional links between layers l-1 and l (sec. 2.4.2)."""
        if not 1 <= stage <= self.height:
            raise ValueError(f"stage {stage} outside 1..{self.height}")
        return self.switch_count(stage) * self.m[stage - 1]

    @cached_property
    def node_offset(self) -> tuple[int, ...]:
        offsets, total = [], 0
        for layer in range(self.height + 1):
            offsets.append(total)
            total += self.switch_count(layer)
        return tuple(offsets + [total])

    @property
    def num_nodes(self) -> int:
        return self.node_offset[-1]

    @cached_property
    def up_offset(self) -> tuple[int, ...]:
        """First up-channel id of each stage (index 0 unused)."""
        return tuple([0] + [2 * sum(self.link_count(j) for j in range(1, k)) for k in range(1, self.height + 1)])

    @cached_property
    def down_offset(self) -> tuple[int, ...]:
        return tuple([0] + [self.up_offset[k] + self.link_count(k) for k in range(1, self.height + 1)])

    @property
    def num_channels(self) -> int:
        return 2 * sum(self.switch_count(k) * self.m[k - 1] for k in range(1, self.height + 1))

    def symmetries(self) -> list[np.ndarray]:
        """Per level i = 1..H: leaf digit m_i + 1 (mod M_i) in every node below layer i, with the up
        choice w_{i+1} + 1 (mod W_{i+1}) in every node above it (layer i fixed). Each is an
        automorphism (a link joins a layer-(k-1) node to a layer-k node when the lower node's subtree
        lies in the upper one's and their lower up choices agree: both kept), they commute, and
        where W_1 = 1 and W_{i+1} = M_i (the k-ary fat trees, the 32,768-leaf xgft:3:32,32,32:1,32,32)
        they act freely and transitively on the leaves and move d-mod-k's routes (up choice w_{i+1}
        = the destination's digit m_i) onto the moved pairs': an orbit schedule of leaf 0's blocks.
        [] for the other XGFTs (their leaves would be fixed, or d-mod-k's routes not moved)."""
        h, m, w = self.height, self.m, self.w
        if w[0] != 1 or any(w[i] != m[i - 1] for i in range(1, h)):
            return []
        out = []
        for i in range(1, h + 1):
            image = np.empty(self.num_nodes, dtype=np.int64)
            for layer in range(h + 1):
                span = self.wt_span[layer]
                ids = np.arange(self.switch_count(layer), dtype=np.int64)
                mt, wt = ids // span, ids % span
                if layer < i:  # d_i is digit i - layer - 1 of the subtree index (radix M_{layer+1}..M_H)
                    stride, radix = prod(m[layer:i - 1]), m[i - 1]
                    digit = (mt // stride) % radix
                    mt = mt + ((digit + 1) % radix - digit) * stride
                elif layer > i:  # w_{i+1} is digit i of the up choices (radix W_1..W_layer)
                    stride, radix = self.wt_span[i], w[i]
                    digit = (wt // stride) % radix
                    wt = wt + ((digit + 1) % radix - digit) * stride
                image[self.node_offset[layer] + ids] = self.node_offset[layer] + mt * span + wt
            out.append(image)
        return out

    def hierarchy(self) -> tuple[int, ...]:
        """Subnetwork sizes H_1..H_L for hierarchical exchanges (ch.4: H_l = M_l)."""
        return self.m

    def facts(self) -> list[tuple[str, str]]:
        return [("height", str(self.height)), ("leaves", str(self.num_leaves)),
                ("switches", str(self.num_nodes - self.num_leaves)), ("links", str(self.num_channels // 2)),
                ("minimal paths between leaves in different top subtrees", str(self.wt_span[-1]))]

    # ----- capabilities (synth.topology.family.Topology) ------------------------------------------
    @property
    def ports_per_terminal(self) -> int:
        return self.w[0]

    def bound_names(self) -> tuple[str, ...]:
        return tuple(f"stage {k}" for k in range(1, self.height + 1))

    def report_patterns(self) -> list[str]:
        """The seed's exchanges (Prisacari20 sec. 2.3, 4.2) in its order; XOR needs a power-of-two number of leaves."""
        n = self.num_leaves
        return ["a2a-lin"] + (["a2a-xor"] if n & (n - 1) == 0 else []) + ["a2a-opt", "a2a-ghe", "a2a-bgh"]

    def closed_forms(self) -> frozenset[str]:
        return frozenset({FAT_TREE_FORMS})

    def minimal_channels(self, src, dst) -> np.ndarray:
        return 2 * self.nca_layer(src, dst)

    def all_pairs_minimal_channels(self) -> int:
        span = self.mt_span  # a leaf has span[l] - span[l - 1] others whose nearest common ancestor is at layer l
        return self.num_leaves * sum(2 * l * (span[l] - span[l - 1]) for l in range(1, self.height + 1))

    # ----- addressing -------------------------------------------------------------------------
    def node_id(self, layer: int, mt, wt):
        return self.node_offset[layer] + np.asarray(mt) * self.wt_span[layer] + np.asarray(wt)

    def node_layer_mt_wt(self, node: int) -> tuple[int, int, int]:
        layer = int(np.searchsorted(self.node_offset, node, side="right") - 1)
        local = node - self.node_offset[layer]
        return layer, local // self.wt_span[layer], local % self.wt_span[layer]

    def node_coords(self, node: int) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """(l; m_H..m_{l+1}; w_l..w_1), the seed's coordinates of a node."""
        layer, mt, wt = self.node_layer_mt_wt(node)
        m_digits = [(mt // (self.mt_span[k] // self.mt_span[layer])) % self.m[k] for k in range(layer, self.height)]
        w_digits = [(wt // self.wt_span[k]) % self.w[k] for k in range(layer)]
        return layer, tuple(reversed(m_digits)), tuple(reversed(w_digits))

    def node_name(self, node: int) -> str:
        layer, m_digits, w_digits = self.node_coords(node)
        if layer == 0:
            return f"t{node}"
        parts = [f"s{layer}"]
        if m_digits:
            parts.append("m" + ".".join(map(str, m_digits)))
        parts.append("w" + ".".join(map(str, w_digits)))
        return "-".join(parts)

    def nca_layer(self, src, dst) -> np.ndarray:
        """delta: the layer of the nearest common ancestors (0 when src == dst)."""
        src, dst = np.asarray(src), np.asarray(dst)
        delta = np.zeros(np.broadcast(src, dst).shape, dtype=np.int64)
        for layer in range(self.height):
            delta += div(src, self.mt_span[layer]) != div(dst, self.mt_span[layer])
        return delta

    def path_count(self, delta) -> np.ndarray:
        """Property 1: W_1*...*W_delta minimal up*/down* paths for a flow whose NCA is at layer delta."""
        return np.asarray(self.wt_span, dtype=np.int64)[np.asarray(delta)]

    # ----- paths ------------------------------------------------------------------------------
    def channel_keys(self, src, dst, choice, offset=None, missing: int = -1) -> np.ndarray:
        """Channel ids of every flow's path, shape (2H, n): rows 0..H-1 are the up channels of
        stages 1..H, rows H..2H-1 the down channels; `missing` where a flow does not use a stage.

        `choice` is the WT index at the NCA layer (0 <= choice < P_delta). A flow uses stage k
        exactly when source and destination lie in different layer-(k-1) subtrees. With a
        per-flow `offset` the result is channel + offset (and missing + offset): keys that one
        bincount turns into per-(phase, channel) loads. Arithmetic runs in int32 where the keys
        fit, which roughly halves the time of this inner loop.
        """
        src, dst, choice = (np.asarray(a) for a in (src, dst, choice))
        n, height = src.shape[0], self.height
        offset = np.zeros(n, dtype=np.int64) if offset is None else np.asarray(offset, dtype=np.int64)
        largest = max(self.num_channels, missing) + int(offset.max(initial=0))
        work = np.int32 if largest < 2**31 and self.num_leaves < 2**31 else np.int64
        src, dst, choice, offset_w = (a.astype(work, copy=False) for a in (src, dst, choice, offset))
        keys = np.empty((2 * height, n), dtype=np.int64)
        missing_keys = offset + missing
        src_tree, dst_tree, wt, tmp = (np.empty(n, dtype=work) for _ in range(4))
        unused = np.empty(n, dtype=bool)
        for k in range(1, height + 1):
            div(src, self.mt_span[k - 1], out=src_tree)
            div(dst, self.mt_span[k - 1], out=dst_tree)
            np.equal(src_tree, dst_tree, out=unused)
            mod(choice, self.wt_span[k], out=wt)
            wt += offset_w
            for row, tree, base in ((k - 1, src_tree, self.up_offset[k]), (height + k - 1, dst_tree, self.down_offset[k])):
                mul(tree, self.wt_span[k], out=tmp)
                tmp += wt
                np.add(tmp, base, out=keys[row])
                np.copyto(keys[row], missing_keys, where=unused)
        return keys

    def stage_channels(self, src, dst, choice, missing: int = -1) -> tuple[np.ndarray, np.ndarray]:
        """Up and down channel ids per stage, each of shape (H, n); `missing` where unused."""
        keys = self.channel_keys(src, dst, choice, missing=missing)
        return keys[: self.height], keys[self.height :]

    def hop_matrix(self, src, dst, choice) -> np.ndarray:
        """Channels of every path in travel order, shape (n, 2H), padded with -1."""
        src = np.asarray(src, dtype=np.int64)
        delta = self.nca_layer(src, dst)
        up, down = self.stage_channels(src, dst, choice)
        height = self.height
        column = np.arange(2 * height)
        flows = np.arange(src.shape[0])[:, None]
        up_stage = np.minimum(column, height - 1)[None, :]
        down_stage = np.clip(2 * delta[:, None] - column[None, :] - 1, 0, height - 1)
        delta_col = delta[:, None]
        return np.where(
            column[None, :] < delta_col,
            up.T[flows, up_stage],
            np.where(column[None, :] < 2 * delta_col, down.T[flows, down_stage], -1),
        )

    def path_nodes(self, src, dst, choice) -> list[list[int]]:
        """Node ids of every path from source to destination (the routes file's `paths`)."""
        src, dst, choice = (np.asarray(a, dtype=np.int64) for a in (src, dst, choice))
        delta = self.nca_layer(src, dst)
        height = self.height
        up_nodes = np.stack([self.node_id(k, src // self.mt_span[k], choice % self.wt_span[k]) for k in range(height + 1)])
        down_nodes = np.stack([self.node_id(k, dst // self.mt_span[k], choice % self.wt_span[k]) for k in range(height + 1)])
        up_rows, down_rows, deltas = up_nodes.T.tolist(), down_nodes.T.tolist(), delta.tolist()
        return [u[: d + 1] + dn[d - 1 :: -1] if d else [u[0]] for u, dn, d in zip(up_rows, down_rows, deltas)]

    # ----- the network arrays -----------------------------------------------------------------
    def build_network(self) -> Network:
        src_parts, src_port_parts, dst_parts, dst_port_parts = [], [], [], []
        for k in range(1, self.height + 1):
            link = np.arange(self.link_count(k), dtype=np.int64)
            mt_lower, wt_upper = link // self.wt_span[k], link % self.wt_span[k]
            lower = self.node_id(k - 1, mt_lower, wt_upper % self.wt_span[k - 1])
            upper = self.node_id(k, mt_lower // self.m[k - 1], wt_upper)
            lower_down_ports = self.m[k - 2] if k >= 2 else 0
            lower_port = lower_down_ports + 1 + wt_upper // self.wt_span[k - 1]
            upper_port = mt_lower % self.m[k - 1] + 1
            src_parts += [lower, upper]
            src_port_parts += [lower_port, upper_port]
            dst_parts += [upper, lower]
            dst_port_parts += [upper_port, lower_port]
        levels = np.repeat(np.arange(self.height + 1), [self.switch_count(l) for l in range(self.height + 1)])
        return Network(
            spec=self.spec,
            family="xgft",
            staged=True,
            num_terminals=self.num_leaves,
            node_level=levels.astype(np.int64),
            node_names=[self.node_name(i) for i in range(self.num_nodes)],
            channel_src=np.concatenate(src_parts),
            channel_src_port=np.concatenate(src_port_parts),
            channel_dst=np.concatenate(dst_parts),
            channel_dst_port=np.concatenate(dst_port_parts),
        )


def parse_xgft(text: str) -> Xgft:
    """Parse `H:M_1,..,M_H:W_1,..,W_H` (the part of `xgft:...` after the family name)."""
    spec = f"xgft:{text}"
    parts = text.split(":")
    if len(parts) != 3:
        raise SynthError(f"XGFT spec must be xgft:H:M_1,...,M_H:W_1,...,W_H, got {show(spec)}")
    height = parse_int(parts[0], f"XGFT height in {show(spec)}", 1, MAX_HEIGHT)
    m = tuple(parse_int(v, f"XGFT M_{i} in {show(spec)}", 1, MAX_RADIX) for i, v in enumerate(parts[1].split(","), 1))
    w = tuple(parse_int(v, f"XGFT W_{i} in {show(spec)}", 1, MAX_RADIX) for i, v in enumerate(parts[2].split(","), 1))
    if len(m) != height or len(w) != height:
        raise SynthError(f"XGFT of height {height} needs {height} M and {height} W values, got {len(m)} and {len(w)}")
    return Xgft(m, w)


def xgft_candidates(shape) -> list[str]:
    """The XGFT whose levels are the routers' hops from the terminals' (plus 1): M_l and W_l the most channels
    between two levels, W_1 = 1 (a CA has one cabled port)."""
    levels = shape.levels
    if shape.directed or shape.p == 0 or not levels.all():
        return []
    m, w = [shape.p], [1]
    for lower in range(1, int(levels.max())):
        up, down = shape.between_levels(lower)
        m.append(down)
        w.append(up)
    height = len(m)
    leaves = [prod(m[:level]) for level in range(height + 1)]  # MT nodes per switch layer: Pi_H / Pi_l
    planes = [prod(w[:level]) for level in range(height + 1)]
    switches = sum(leaves[height] // leaves[level] * planes[level] for level in range(1, height + 1))
    channels = 2 * sum(leaves[height] // leaves[level] * planes[level] * w[level] for level in range(1, height))
    return [f"xgft:{height}:{','.join(map(str, m))}:{','.join(map(str, w))}"] if shape.admits(switches, channels) else []


FAMILY = Family("xgft", "xgft:H:M_1,...,M_H:W_1,...,W_H", "extended generalized fat tree (Prisacari20 ch.2-3)", parse_xgft, candidates=xgft_candidates)
