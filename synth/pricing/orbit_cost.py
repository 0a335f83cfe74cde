"""An orbit schedule priced on its orbit (synth.collectives.orbit): the whole schedule's
MappedSchedule (synth.pricing.schedule_cost) without expanding it.

Orbit-stabilizer, per step s: the group G moves the representative's deliveries onto every
delivery of the whole schedule, each |G| times in all; a channel c of channel orbit O is the image
of each channel of O equally often, so it carries |G| / |O| times the representative's bytes over
O (the crossings of O by the step's deliveries, each with its chunk's bytes). A message orbit (the
deliveries of one step at one displacement: one transfer per rank, translated) has |G| transfers,
starting at the images of its first port, |G| / |K| at each port of that port's orbit K; its
transfer carries the bytes of all its deliveries. So, per step, the busiest channel's bytes over
bandwidth, the most messages at one port, the largest transfer, the most transfers on one
router-to-router channel and the longest path follow from the representative's deliveries alone.
The cost model (synth.pricing.alphabeta) then prices them as it prices every schedule.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from synth.collectives.orbit import OrbitSchedule, message_orbits
from synth.pricing.alphabeta import message_ports
from synth.pricing.bounds import blocks_bound
from synth.pricing.schedule_cost import MappedSchedule, deficiency_ports, per_step_max


def orbit_blocks(orbit: OrbitSchedule) -> SimpleNamespace:
    """What the bounds read of a schedule (its collective, ranks and block sizes), for an orbit's
    whole schedule."""
    return SimpleNamespace(collective=orbit.collective, ranks=orbit.ranks, ranks_per_node=1,
                           block_bytes=np.repeat(np.asarray(orbit.chunk_bytes, dtype=np.int64), orbit.ranks),
                           root=None, peer=None)


def map_orbit(orbit: OrbitSchedule, topology) -> MappedSchedule:
    """The whole schedule's per-step terms, from the orbit (module docstring)."""
    network = topology.network()
    group = orbit.translation_group(topology)
    classes, class_size = group.channel_classes
    repeat = (group.order // class_size).astype(np.float64)
    n, steps = orbit.num_deliveries, orbit.steps
    size = np.asarray(orbit.chunk_bytes, dtype=np.float64)[orbit.chunk]
    lengths = orbit.paths.lengths()
    hop_step = np.repeat(orbit.step, lengths)
    hop_class = classes[orbit.paths.channels]
    k = len(class_size)
    # per (step, channel orbit): the representative's bytes, x |G| / |O| per channel, over its bandwidth
    cells = np.bincount(hop_step * k + hop_class, weights=np.repeat(size, lengths), minlength=steps * k)
    bandwidth = np.zeros(k)
    bandwidth[classes] = network.channel_bandwidth
    per_channel = cells.reshape(steps, k) * repeat / bandwidth
    channel_bytes = per_channel.max(axis=1, initial=0.0)
    # message orbits: one transfer per rank each, its bytes all its deliveries'
    message = message_orbits(orbit, group)
    m = int(message.max(initial=-1)) + 1
    first = np.full(m, n, dtype=np.int64)
    np.minimum.at(first, message, np.arange(n))
    m_step = orbit.step[first] if m else np.zeros(0, dtype=np.int64)
    m_bytes = np.bincount(message, weights=size, minlength=m)
    m_paths = orbit.paths.select(first)
    port_class = classes[message_ports(network, m_paths)]
    per_port = np.bincount(m_step * k + port_class, minlength=steps * k).reshape(steps, k) * repeat
    inner = (network.channel_src >= network.num_terminals) & (network.channel_dst >= network.num_terminals)
    m_hops = np.repeat(m_step, m_paths.lengths()) * k + classes[m_paths.channels]
    crossings = np.bincount(m_hops, minlength=steps * k).reshape(steps, k) * repeat
    inner_class = np.zeros(k, dtype=bool)
    inner_class[classes[inner]] = True
    return MappedSchedule(
        steps=steps,
        channel_bytes=channel_bytes,
        transfer_bytes=per_step_max(m_step, m_bytes, steps),
        flows=(crossings * inner_class).max(axis=1, initial=0).astype(np.int64),
        hops=per_step_max(m_step, np.maximum(m_paths.lengths() - 2, 0).astype(np.float64), steps).astype(np.int64),
        vector_bytes=int(np.asarray(orbit.chunk_bytes).sum()) * orbit.ranks,
        ports=deficiency_ports(topology),
        size_bytes=np.zeros(steps),
        port_messages=per_port.max(axis=1, initial=0).astype(np.int64),
        size_port_messages=np.zeros(steps, dtype=np.int64),
        bound=blocks_bound(orbit_blocks(orbit), network),
    )
