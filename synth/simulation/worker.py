"""The worker process of a simulation: `python -m synth.simulation.worker INPUT.npz OUTPUT.npz` loads
SimGrid, builds the platform of INPUT (synth.simulation.platform), replays its transfers and writes
every transfer's start and finish time to OUTPUT. One simulation per process: SimGrid's Engine is
one per process (synth.simulation.simgrid_module).

Two ways to drive SimGrid:
- `driver` (bulk-synchronous steps): one actor starts every transfer of a step at once
  (Comm.sendto_async: host to host along the route, no mailbox) and waits for all of them; the
  next step starts when the last one has ended. With a per-message overhead o, the k-th message
  (from 0) a rank sends in a step leaves (k + 1) x o after the step starts (the rank's CPU is busy
  o per message, LogP's o). One actor only, so SimGrid may switch to it without an OS thread
  (contexts/factory:raw): a context switch costs about 5 us instead of 100 us with Python's
  threads (measured, 16,384 transfers: 0.08 s against 1.7 s to start them).
- `actors` (one actor per rank, what the asynchronous discipline needs, and the bulk-synchronous
  one with a barrier per step): rank r, for each step s in order where it sends, first receives
  every message addressed to it in the steps before s (it holds their blocks), then sends its
  step-s messages (overhead o before each), and does not wait for them: a rank runs ahead as an
  MPI library's non-blocking sends let it. Messages go through one mailbox per (receiver, step)
  with the receiver as its permanent receiver, so a transfer starts as soon as it is sent (eager),
  not when the receiver asks for it. Python actors need SimGrid's thread contexts.

A copy cost (the input's `copy`: seconds per transfer, what its receiver spends copying it out of
its receive buffer) is the receiver's time after the transfer arrived: with the driver, a rank
copies a step's messages once the last of them has arrived, and the step ends when every rank has
copied; with actors, a rank copies what it took of a step before it sends again (and at the end). A
transfer is `done` when its receiver has copied it (its finish without copies).

Progress lines ("synth-progress: ...") go to stderr for the parent to show.
"""

from __future__ import annotations

import gc
import os
import signal
import resource
import sys

import numpy as np

PROGRESS = "synth-progress: "


def _say(enabled: bool, text: str) -> None:
    if enabled:
        print(PROGRESS + text, file=sys.stderr, flush=True)


# The zone and its links' Python objects live as long as the simulation: freeing them after the platform is built
# made the 64 x 64 torus's Swing replay 40% slower (72 s against 52 s, measured twice)
_KEPT: list = []


def build(data: dict):
    """SimGrid loaded, its Engine configured and the platform of `data` made: (api, hosts), with
    api a simgrid_module.Api (the module as api.sg, the Engine as api.engine)."""
    from synth.simulation import simgrid_module

    model = str(data["model"])
    try:
        sg = simgrid_module.load(model)
    except Exception as exc:  # noqa: BLE001 - a file that is not SimGrid's module: the parent says so in one line
        print(f"{PROGRESS}cannot load SimGrid's module {simgrid_module.locate(model)}: {exc}", file=sys.stderr, flush=True)
        sys.stderr.flush()
        os._exit(simgrid_module.LOAD_FAILED)
    engine_kind = str(data["engine"])
    config = ["synth-simulate", f"--cfg=network/model:{model}",
              "--cfg=network/crosstraffic:0", "--log=root.thres:critical", "--log=no_loc"]
    if engine_kind == "driver":
        config.append("--cfg=contexts/factory:raw")
    api = simgrid_module.Api(sg, sg.Engine(config))
    # SimGrid's Engine installs its own SIGINT handler (it prints the actors and calls exit(1), which
    # then hung in the interpreter's exit here): a worker leaves SIGINT to its parent
    # (quiet_worker), which ignores it when it was started ignoring it (in the background) and else
    # stops the worker itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    zone = api.full_zone("synth")
    hosts = [api.add_host(zone, f"h{i}", 1e9) for i in range(int(data["hosts"]))]
    links = [sg.LinkInRoute(api.add_link(zone, f"l{i}", bandwidth).set_latency(latency))
             for i, (bandwidth, latency) in enumerate(zip(data["link_bandwidth"].tolist(), data["link_latency"].tolist()))]
    ptr, route_links = data["route_ptr"].tolist(), data["route_links"].tolist()
    for r, (a, b) in enumerate(zip(data["route_src"].tolist(), data["route_dst"].tolist())):
        api.add_route(zone, hosts[a], hosts[b], [links[c] for c in route_links[ptr[r]:ptr[r + 1]]])
    zone.seal()
    _KEPT.extend([zone, links])
    return api, hosts


def simulate(data: dict) -> dict:
    """Run one simulation (in this process, which it then cannot run another): the arrays of
    synth.simulation.runner.pack in, start and finish times per transfer out."""
    api, hosts = build(data)
    sg = api.sg
    gc.disable()  # hundreds of thousands of short-lived objects and no cycles: nothing for the collector to find
    engine_kind = str(data["engine"])
    progress = bool(data["progress"])
    step = data["step"]
    steps = int(step[-1]) + 1 if len(step) else 0
    count = len(step)
    start, finish = np.zeros(count), np.zeros(count)
    overhead = float(data["overhead"])
    src_host, dst_host, size = data["src_host"].tolist(), data["dst_host"].tolist(), data["bytes"].tolist()
    copy = data["copy"] if "copy" in data else np.zeros(count)
    copied_at = np.zeros(count)  # when the receiver had copied the transfer (its finish without copies)
    step_ptr = np.searchsorted(step, np.arange(steps + 1)).tolist()

    if engine_kind == "driver":
        message_index = _message_index(step, data["src_rank"])
        dst_rank = np.asarray(data["dst_rank"], dtype=np.int64)

        # runs (synth compare --simulate): the steps run_steps[r]:run_steps[r+1] replayed once per scale, one after
        # another on the idle network (a replay leaves no state behind but the clock), bytes x scale
        run_steps = data["run_steps"].tolist() if "run_steps" in data else [0, steps]
        scales = data["scales"] if "scales" in data else np.ones((1, 1))
        run_times = np.zeros(scales.shape)

        def replay(s: int, scale: float) -> None:
            a, b = step_ptr[s], step_ptr[s + 1]
            sent = size[a:b] if scale == 1.0 else [round(v * scale) for v in size[a:b]]
            comms = []
            if overhead > 0:
                k = message_index[a:b]
                for wave in range(int(k.max(initial=-1)) + 1):
                    sg.this_actor.sleep_for(overhead)
                    comms += [(t, sg.Comm.sendto_async(hosts[src_host[t]], hosts[dst_host[t]], sent[t - a]))
                              for t in (a + np.flatnonzero(k == wave)).tolist()]
            else:
                comms = [(t, sg.Comm.sendto_async(hosts[src_host[t]], hosts[dst_host[t]], sent[t - a]))
                         for t in range(a, b)]
            api.wait_all([c for _, c in comms])
            for t, c in comms:
                start[t], finish[t] = c.start_time, c.finish_time
            copying = copy[a:b] * scale
            if not copying.any():
                copied_at[a:b] = finish[a:b]
                return
            # every receiver copies its messages once the last has arrived; the step ends when all have
            receiver = dst_rank[a:b]
            ends = np.full(int(receiver.max()) + 1, -np.inf)
            np.maximum.at(ends, receiver, finish[a:b])
            copied = np.bincount(receiver, copying, len(ends))
            copied_at[a:b] = (ends + copied)[receiver]
            wait = float(copied_at[a:b].max()) - sg.Engine.clock
            if wait > 0:
                sg.this_actor.sleep_for(wait)

        def drive() -> None:
            done, total = 0, steps * scales.shape[1]
            for r in range(len(run_steps) - 1):
                for k, scale in enumerate(scales[r].tolist()):
                    began_run = sg.Engine.clock
                    for s in range(run_steps[r], run_steps[r + 1]):
                        replay(s, scale)
                        done += 1
                        if progress and done % max(1, total // 20) == 0:
                            _say(True, f"{done:,} of {total:,} steps simulated" if scales.size > 1 else
                                 f"step {s + 1} of {steps} simulated, at {sg.Engine.clock * 1e6:.6g} us")
                    run_times[r, k] = sg.Engine.clock - began_run

        sg.Actor.create("driver", hosts[0], drive)
    else:
        _rank_actors(api, data, hosts, steps, start, finish, overhead, bool(data["barrier"]), progress, copy, copied_at)
    api.engine.run()
    return {"start": start, "finish": finish, "done": copied_at, "clock": np.array([sg.Engine.clock]),
            "peak_kb": np.array([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]),
            "run_times": run_times if engine_kind == "driver" else np.zeros((0, 0)),
            "version": np.array(str(getattr(sg, "simgrid_version", "unknown")))}


def _message_index(step: np.ndarray, sender: np.ndarray) -> np.ndarray:
    """Per transfer, how many transfers of the same sender come before it in its step."""
    order = np.lexsort((np.arange(len(step)), sender, step))
    key = step[order] * (int(sender.max(initial=0)) + 1) + sender[order]
    first = np.concatenate([[True], key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(key)), 0))
    index = np.empty(len(step), dtype=np.int64)
    index[order] = np.arange(len(key)) - group_start
    return index


def _rank_actors(api, data, hosts, steps, start, finish, overhead, barrier_each_step, progress, copy, copied_at) -> None:
    """One actor per rank (the asynchronous discipline; with barrier_each_step the bulk-synchronous
    one, to compare with the driver)."""
    sg = api.sg
    step, src_rank, dst_rank = data["step"].tolist(), data["src_rank"].tolist(), data["dst_rank"].tolist()
    size, src_host = data["bytes"].tolist(), data["src_host"].tolist()
    node_of_rank = data["rank_host"].tolist()
    ranks = len(node_of_rank)
    sends: list[dict[int, list[int]]] = [{} for _ in range(ranks)]
    receives: list[dict[int, int]] = [{} for _ in range(ranks)]
    for t in range(len(step)):
        sends[src_rank[t]].setdefault(step[t], []).append(t)
        receives[dst_rank[t]][step[t]] = receives[dst_rank[t]].get(step[t], 0) + 1
    everyone = sg.Barrier(ranks)
    done = [0]
    marks = max(1, len(step) // 20)

    def rank(r: int) -> None:
        me = sg.Actor.self()
        boxes = {s: sg.Mailbox.by_name(f"{r}:{s}") for s in receives[r]}
        for box in boxes.values():
            box.set_receiver(me)
        everyone.wait()
        waiting = sorted(receives[r])  # steps whose messages to r are still to be taken
        sent = []
        here = [node_of_rank[r]]

        def take_before(limit: int) -> None:
            while waiting and waiting[0] < limit:
                s = waiting.pop(0)
                taken = [boxes[s].get() for _ in range(receives[r][s])]  # the payload is the transfer's index
                copying = float(sum(copy[t] for t in taken))
                if copying > 0:
                    sg.this_actor.sleep_for(copying)
                for t in taken:
                    copied_at[t] = sg.Engine.clock

        for s in range(steps) if barrier_each_step else sorted(sends[r]):
            if not barrier_each_step:
                take_before(s)
            mine = []
            for t in sends[r].get(s, ()):
                if overhead > 0:
                    sg.this_actor.sleep_for(overhead)
                if src_host[t] != here[0]:  # another path to the same receiver, or a copy within the node
                    here[0] = src_host[t]
                    sg.this_actor.set_host(hosts[here[0]])
                mine.append((t, sg.Mailbox.by_name(f"{dst_rank[t]}:{s}").put_async(t, size[t])))
            sent += mine
            if barrier_each_step:
                take_before(s + 1)
                api.wait_all([c for _, c in mine])
                everyone.wait()
                if r == 0 and (s + 1) % max(1, steps // 20) == 0:
                    _say(progress, f"step {s + 1} of {steps} simulated, at {sg.Engine.clock * 1e6:.6g} us")
        take_before(steps)
        for t, c in sent:
            c.wait()
            start[t], finish[t] = c.start_time, c.finish_time
            done[0] += 1
            if done[0] % marks == 0:
                _say(progress, f"{done[0]:,} of {len(step):,} transfers simulated")

    for r in range(ranks):
        sg.Actor.create(f"rank{r}", hosts[node_of_rank[r]], rank, r)


def main(argv: list[str]) -> int:
    from synth.core.interrupt import quiet_worker

    source, target, parent = argv[0], argv[1], int(argv[2])
    quiet_worker(parent)
    with np.load(source, allow_pickle=False) as archive:
        data = {key: archive[key] for key in archive.files}
    result = simulate(data)
    with open(target + ".part", "wb") as handle:
        np.savez(handle, **result)
    os.replace(target + ".part", target)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter finalization under SimGrid's contexts


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
