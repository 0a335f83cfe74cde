"""The size guards and tuned constants of schedule synthesis, in one place: the planner and every
method read them from here (at call time, so a test may lower a guard to take a large network's
path on a small one). Each tuned figure says what was measured."""

from __future__ import annotations

MAX_EXACT_RANKS = 64  # the whole program: P (P - 1) deliveries per chunk
MAX_SYMMETRIC_RANKS = 4096  # the representatives' program, or their balanced trees where the program is too large
MAX_LAYERED_RANKS = 2048  # the per-layer points' stages are priced over every rank pair's path
MAX_TREE_DELIVERIES = 4_000_000  # the balanced trees' deliveries, P (P - 1) x chunks, made one by one (minutes)
MAX_ORBIT_PAIRS = 1 << 23  # an orbit synthesis' transfer graph (dragonfly:8,16,8's 3.2 M neighbour pairs: 5 s, 1 GB)
MAX_RELAY_DELIVERIES = 1 << 24  # above, the relay trees alone (arrays): 4,096 ranks' blocks (Slim Fly q = 13: 3,380)
# What one delivery of the whole translated schedule costs at the peak (the representatives' deliveries moved by
# every translation, sorted into steps, replayed and priced): measured 414 B (peak RSS of torus:16,16's allgather,
# 4 -> 16 chunks: +324 MB for +783k deliveries); torus:64,64 with 16 chunks (268 M deliveries) died past 19 GB.
BYTES_PER_DELIVERY = 400
MAX_EVERY_PAIRS = 1 << 22  # the straight, relay and per-layer points' pairs: no program, arrays of them (2,048 ranks)
LAYERED_PIECES = (2, 4, 8)  # the pipelined per-layer points' pieces (each within MAX_TREE_DELIVERIES)
SCATTER_PIECES = (1, 4, 16, 64)  # the scatter-then-allgather broadcast's pipelined pieces
CHAIN_PIECES = (64, 256, 1024, 4096)  # the pipelined chains' pieces
PACKED_TREES = 64  # trees of a packing at most (M: blocks a round, one on each tree)
PACKING_WORK = 25_000_000  # trees x transfer pairs x ranks of one packing (the (3,6,3) dragonfly's 8 trees: 12 s)
PACKING_RESTARTS = 8  # tries of a packing at most, until one meets the cut bound,
RESTART_WORK = 20_000_000  # while the tries' trees x transfer pairs x ranks stay within this
PACKED_ROUNDS = tuple(1 << i for i in range(2, 11))  # the packed trees' rounds, pipelined: 4 to 1,024
STRIPES = (2, 3, 4, 8)  # the striped trees' stripes (a rank's children, the messages it starts a step)
