"""Per-channel loads as CSV, for spreadsheets and plotting scripts."""

from __future__ import annotations

import csv
from typing import IO

from synth.topology.network import Network


def write_loads_csv(handle: IO[str], network: Network, loads) -> None:
    """One row per directed channel: its endpoints, where it sits (XGFT: stage and direction; other
    families: the channel class, e.g. `local`, `global`, `dim 0`, `terminal`), the messages summed
    over the phases, the largest load in a single phase, and the bytes summed over the phases."""
    writer = csv.writer(handle, lineterminator="\n")
    if network.staged:
        stage, up = network.channel_stage().tolist(), network.channel_is_up().tolist()
        header, place = ["stage", "direction"], [[s, "up" if u else "down"] for s, u in zip(stage, up)]
    else:
        header, place = ["class"], [[network.class_names[k]] for k in network.channel_class.tolist()]
    writer.writerow(["channel", "src", "src_port", "dst", "dst_port", *header,
                     "messages", "peak_messages_per_phase", "bytes"])
    names = network.node_names
    columns = zip(network.channel_src.tolist(), network.channel_src_port.tolist(), network.channel_dst.tolist(),
                  network.channel_dst_port.tolist(), place, loads.total_messages.tolist(), loads.peak_messages.tolist(),
                  loads.total_bytes.tolist())
    for channel, (src, src_port, dst, dst_port, where, messages, peak, size) in enumerate(columns):
        writer.writerow([channel, names[src], src_port, names[dst], dst_port, *where, messages, peak, size])
