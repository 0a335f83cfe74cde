"""The paths a schedule file records (`synth-schedule/2`, docs/formats.md): per transfer between nodes
the channels it crosses, the paths its recorded cost was computed on (a synthesized schedule's), so
that pricing and simulating the file give that cost, not a router's.

Kept compactly, as a table of the distinct paths the transfers take: entry e joins terminal
`pairs[e][0]` to terminal `pairs[e][1]` along channels `channels[offsets[e]:offsets[e+1]]` (a CSR, in
travel order). A transfer between nodes (rank r on terminal r // ranks_per_node) takes the entry of
its pair of terminals; where a pair takes several paths (halves routed apart, a router's paths that
change from step to step), `transfers` names the entry of every transfer between nodes, in file
order. Transfers within a node move through memory and have no entry.

Read strictly: every pair, offset and channel in range, every entry a path (each channel leaving
the node where the one before it arrives) from its pair's first terminal to its second, and every
transfer between nodes given its pair's entry; one line naming the field otherwise (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.core.text import counted
from synth.topology.paths import Paths


@dataclass(frozen=True)
class PathTable:
    pair_src: np.ndarray  # (entries,) terminals
    pair_dst: np.ndarray
    offsets: np.ndarray  # (entries + 1,) into channels
    channels: np.ndarray  # channel ids, in travel order
    transfers: np.ndarray | None  # per transfer between nodes its entry; None: its pair's (one entry a pair)


JSON_NAMES = {"src": "paths.pairs", "dst": "paths.pairs", "offsets": "paths.offsets", "channels": "paths.channels",
              "transfers": "paths.transfers"}
HDF5_NAMES = {"src": "path_src", "dst": "path_dst", "offsets": "path_ptr", "channels": "path_channels",
              "transfers": "path_of"}


def _across(schedule) -> np.ndarray:
    q = schedule.ranks_per_node
    return (schedule.src // q) != (schedule.dst // q)


def path_table(schedule) -> PathTable:
    """The distinct (pair, path) entries of a schedule's recorded paths (Schedule.paths), sorted by
    pair then path: the same schedule gives the same table."""
    across = _across(schedule)
    q = schedule.ranks_per_node
    a, b = schedule.src[across] // q, schedule.dst[across] // q
    paths = schedule.paths
    if paths.num_flows != len(a):
        raise ValueError(f"{paths.num_flows} recorded paths for {len(a)} transfers between nodes")
    lengths = paths.lengths()
    width = int(lengths.max(initial=0))
    rows = np.full((len(a), width + 2), -1, dtype=np.int64)
    rows[:, 0], rows[:, 1] = a, b
    hop = np.arange(len(paths.channels), dtype=np.int64) - np.repeat(paths.offsets[:-1], lengths)
    rows[np.repeat(np.arange(len(a)), lengths), 2 + hop] = paths.channels
    if len(rows):
        table, inverse = np.unique(rows, axis=0, return_inverse=True)
        inverse = np.asarray(inverse).ravel()
    else:
        table, inverse = rows, np.zeros(0, dtype=np.int64)
    hops = table[:, 2:]
    used = hops >= 0  # the padding follows a path's channels
    offsets = np.concatenate([[0], np.cumsum(used.sum(axis=1))]).astype(np.int64)
    repeated = len(table) > 1 and bool(((table[1:, 0] == table[:-1, 0]) & (table[1:, 1] == table[:-1, 1])).any())
    return PathTable(table[:, 0].copy(), table[:, 1].copy(), offsets, hops[used].astype(np.int64),
                     inverse.astype(np.int64) if repeated else None)


def attach_paths(schedule, network, table: PathTable, where: str, names: dict = JSON_NAMES):
    """The schedule with its recorded paths (Schedule.paths) from a file's table, checked against the
    network and the schedule's transfers; one line naming the field (`names`: the file's names of the
    table's arrays) where they are not a path."""
    import dataclasses

    n, channels = network.num_terminals, network.num_channels
    entries = len(table.pair_src)
    if len(table.pair_dst) != entries:
        raise SynthError(f"{where}: {names['src']} has {entries:,} entries, {names['dst']} {len(table.pair_dst):,}")
    for key, values in (("src", table.pair_src), ("dst", table.pair_dst)):
        _in_range(values, 0, n - 1, f"{where}: {names[key]}", "a terminal of the network")
    same = np.flatnonzero(table.pair_src == table.pair_dst)
    if len(same):
        raise SynthError(f"{where}: paths entry {same[0]} joins terminal {table.pair_src[same[0]]} to itself: a "
                         "transfer within a node crosses no channel")
    offsets = table.offsets
    if len(offsets) != entries + 1 or offsets[0] != 0 or offsets[-1] != len(table.channels):
        raise SynthError(f"{where}: {names['offsets']} has {counted(len(offsets), 'offset')}: expected {entries + 1:,} "
                         f"(one more than the entries), from 0 to the {len(table.channels):,} channels")
    lengths = np.diff(offsets)
    empty = np.flatnonzero(lengths <= 0)
    if len(empty):
        raise SynthError(f"{where}: {names['offsets']} must rise strictly (entry {empty[0]} has no channel)")
    _in_range(table.channels, 0, channels - 1, f"{where}: {names['channels']}", "a channel of the network")
    hops = table.channels
    entry_of_hop = np.repeat(np.arange(entries), lengths)
    first, last = hops[offsets[:-1]], hops[offsets[1:] - 1]
    for e in np.flatnonzero(network.channel_src[first] != table.pair_src)[:1]:
        raise SynthError(f"{where}: paths entry {e} (terminal {table.pair_src[e]} -> {table.pair_dst[e]}) starts on "
                         f"channel {first[e]}, which leaves node {network.channel_src[first[e]]}, not terminal "
                         f"{table.pair_src[e]}")
    joined = np.ones(len(hops), dtype=bool)  # hop h continues where hop h - 1 arrived (within an entry)
    joined[1:] = (network.channel_src[hops[1:]] == network.channel_dst[hops[:-1]]) | (entry_of_hop[1:] != entry_of_hop[:-1])
    for h in np.flatnonzero(~joined)[:1]:
        e = entry_of_hop[h]
        raise SynthError(f"{where}: paths entry {e} (terminal {table.pair_src[e]} -> {table.pair_dst[e]}) is not a "
                         f"path: channel {hops[h]} leaves node {network.channel_src[hops[h]]}, but channel {hops[h - 1]} "
                         f"before it arrives at node {network.channel_dst[hops[h - 1]]}")
    for e in np.flatnonzero(network.channel_dst[last] != table.pair_dst)[:1]:
        raise SynthError(f"{where}: paths entry {e} (terminal {table.pair_src[e]} -> {table.pair_dst[e]}) ends on "
                         f"channel {last[e]}, which arrives at node {network.channel_dst[last[e]]}, not terminal "
                         f"{table.pair_dst[e]}")
    across = _across(schedule)
    transfer = np.flatnonzero(across)  # the transfers between nodes, in order
    q = schedule.ranks_per_node
    a, b = schedule.src[across] // q, schedule.dst[across] // q
    keys = table.pair_src * n + table.pair_dst
    if table.transfers is None:
        order = np.argsort(keys, kind="stable")
        repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
        if len(repeated):
            e = order[repeated[0] + 1]
            raise SynthError(f"{where}: paths list terminal {table.pair_src[e]} -> {table.pair_dst[e]} twice, without "
                             f"{names['transfers']} naming each transfer's entry")
        wanted = a * n + b
        at = np.minimum(np.searchsorted(keys[order], wanted), max(entries - 1, 0))
        missing = np.flatnonzero(keys[order][at] != wanted) if entries else np.arange(len(wanted))
        if len(missing):
            t = missing[0]
            raise SynthError(f"{where}: {_transfer(schedule, transfer[t])} goes from terminal {a[t]} to {b[t]}, a pair "
                             "paths does not list")
        entry = order[at]
    else:
        entry = table.transfers
        if len(entry) != len(a):
            raise SynthError(f"{where}: {names['transfers']} names {counted(len(entry), 'entry', 'entries')} for the "
                             f"{len(a):,} transfers between nodes")
        _in_range(entry, 0, entries - 1, f"{where}: {names['transfers']}", "an entry")
        wrong = np.flatnonzero(keys[entry] != a * n + b)
        if len(wrong):
            t = wrong[0]
            raise SynthError(f"{where}: {names['transfers']}[{t}] is entry {entry[t]} (terminal {table.pair_src[entry[t]]} "
                             f"-> {table.pair_dst[entry[t]]}), but {_transfer(schedule, transfer[t])} goes from terminal "
                             f"{a[t]} to {b[t]}")
    return dataclasses.replace(schedule, paths=Paths(offsets, hops).select(entry))


def _transfer(schedule, t: int) -> str:
    step = int(np.searchsorted(schedule.step_ptr, t, side="right")) - 1
    return f"steps[{step}][{t - int(schedule.step_ptr[step])}]"


def _in_range(values: np.ndarray, lo: int, hi: int, where: str, what: str) -> None:
    bad = np.flatnonzero((values < lo) | (values > hi))
    if len(bad):
        raise SynthError(f"{where}[{bad[0]}] is {values[bad[0]]}, not {what} ({lo}..{hi})")
