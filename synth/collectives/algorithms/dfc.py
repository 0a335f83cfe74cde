"""DF-C: Pham26 ch.3's baseline, message-combine collectives on the dragonfly (Table 3.2's
"Dragonfly" column), on a dragonfly whose routers form a 2D grid (one terminal per router, every
router linked to every router of its group and to one router of every other group: the 16 x 17
dragonfly of Table 3.3, Pham26 Fig. 2.5c, isomorphic to the 2dfc G x A; spec 2dfc:G,A or
hyperx:A,G). Rank y A + x is router x of group y: X is the dimension within a group (local links),
Y the dimension between groups (global links).

Where it applies: on that network only, spelled 2dfc:G,A or hyperx:A,G (also synth compare's and
synthesis' generated algorithms there). The `dragonfly:` arrangements (absolute, relative,
circulant, with or without groups=G) spread a group's global ports over its routers by port number,
so in general router x of one group does not meet router x of every other (a small case such as
dragonfly:1,2,4:groups=5:arrangement=circulant happens to be the grid); df-c takes the grid from a
2dfc or hyperx spec and refuses every dragonfly: spec in one line naming the 2dfc of its size.

Every collective takes two combining steps, one per dimension, as Table 3.2 prices them (d_i the
links of one dimension):
- allgather, reduce-scatter, allreduce, alltoall(v): the dimension-order schedules of the 2dfc
  (synth.collectives.algorithms.twodfc, `do`): within the group, then between groups (Table 3.2:
  2 alpha + (d_i + 1) M beta for allgather, 2 alpha + 2M/(d_i + 1) beta for alltoall);
- broadcast: the root sends the message to every router of its group, which each send it to their
  router in every other group: 2 (alpha + M beta);
- scatter: the root sends each router of its group the blocks of that router's column (the routers
  at its place in every group), which forwards each one's block: 2 alpha + M / d_i beta;
- gather and reduce: the same trees backwards (reduce combining the partial blocks on the way).
"""

from __future__ import annotations

import numpy as np

from synth.collectives.algorithms import Algorithm, Request
from synth.collectives.algorithms.twodfc import _Grid, _refusal as _grid_refusal, generate_do
from synth.collectives.schedule import COPY, REDUCE


def generate_dfc(request: Request):
    name = request.collective
    if name in ("allgather", "reduce-scatter", "allreduce", "alltoall", "alltoallv"):
        schedule = generate_do(request)
        schedule.algorithm = "df-c"
        return schedule
    g = _Grid(request)
    builder = request.builder("df-c")
    root = request.root
    ry, rx = divmod(root, g.m1)
    row = g.row(ry)  # the root's group
    blocks = request.blocks
    if name in ("broadcast", "reduce"):
        every = np.arange(blocks)
        out1 = row[row != root]  # root -> its group
        others = np.concatenate([g.column(x)[g.column(x) != x + ry * g.m1] for x in range(g.m1)])
        senders = (others % g.m1) + ry * g.m1  # each group router -> its column in the other groups
        if name == "broadcast":
            builder.add_step(np.full(len(out1), root), out1, np.tile(every, (len(out1), 1)), COPY)
            builder.add_step(senders, others, np.tile(every, (len(others), 1)), COPY)
        else:
            builder.add_step(others, senders, np.tile(every, (len(others), 1)), REDUCE)
            builder.add_step(out1, np.full(len(out1), root), np.tile(every, (len(out1), 1)), REDUCE)
    else:  # scatter, gather: block i belongs to rank i
        members = row[row != root]
        columns = [g.column(members[i] % g.m1) for i in range(len(members))]
        others = np.concatenate([g.column(x)[g.column(x) != x + ry * g.m1] for x in range(g.m1)])
        heads = (others % g.m1) + ry * g.m1
        if name == "scatter":
            builder.add_step(np.full(len(members), root), members, np.stack(columns), COPY)
            builder.add_step(heads, others, others[:, None], COPY)
        else:
            builder.add_step(others, heads, others[:, None], COPY)
            builder.add_step(members, np.full(len(members), root), np.stack(columns), COPY)
    return builder.build()


def _refusal(request: Request) -> str | None:
    if request.dims:  # a grid: 2dfc or hyperx (or a torus, which _grid_refusal names)
        return _dfc_grid_refusal(request)
    from synth.topology import parse_topology

    topology = parse_topology(request.spec) if request.spec.partition(":")[0].strip().lower() == "dragonfly" else None
    if topology is not None:  # the seed's dragonfly is the 2dfc; no dragonfly: wiring is (module notes)
        same = f"2dfc:{topology.groups},{topology.a}" if topology.p == 1 else "2dfc:G,A (one node per router)"
        return (f"df-c runs on Pham26's dragonfly, whose router x of every group links to router x of every other "
                f"group (Fig. 2.5c, Table 3.3's 16 x 17), given as 2dfc:G,A or hyperx:A,G (here {same}); a dragonfly: "
                "spec's arrangements wire a group's global links by port number, in general another network")
    return _dfc_grid_refusal(request)


def _dfc_grid_refusal(request: Request) -> str | None:
    refusal = _grid_refusal(request)
    if refusal is not None:
        return refusal.replace("do and md run", "df-c runs").replace("do and md need", "df-c needs")
    return None


def _default_blocks(request: Request) -> int:
    return request.ranks


ALGORITHM = Algorithm("df-c", ("broadcast", "reduce", "scatter", "gather", "allgather", "reduce-scatter", "allreduce",
                               "alltoall", "alltoallv"),
                      "DF-C (Pham26 ch.3): the dragonfly's message-combine collectives, one step within the group and "
                      "one between groups, on Pham26's dragonfly as the 2dfc G x A (2dfc:G,A or hyperx:A,G; not a "
                      "dragonfly: spec, whose global wiring differs)", generate_dfc, _refusal, _default_blocks)
