"""The executor every MPI rank runs (`python -m synth.run.executor JOB.json`, started by
synth.run.launch under mpirun, or `synth run` itself under the user's own launcher).

Per message size: the rank's plan (synth.run.plan), its buffer filled with its input
(synth.run.data), then `warmup` untimed and `iterations` timed runs of the schedule, each from the
input again (the copy is not timed) and started together (a barrier); then the library's own
collective on the same input, the same number of times. An iteration's time is the most any rank
took (every rank's times are reduced with MAX). The last run's result at every rank is compared
with the library's; the first difference (rank, block, element, the two values) is the verdict.
Rank 0 writes the figures as JSON (written whole, then renamed into place).

Per step (Compiled): messages whose blocks are not one run packed (numpy slice copies), every
receipt and send started at once (persistent requests: MPI_Recv_init into a scratch buffer,
MPI_Send_init from the buffer itself where the blocks are one run), all awaited, then copies and
reductions applied as numpy slice operations: no per-element Python, and no request made per run.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

ERROR_PREFIX = "synth-run: error: "
PROGRESS_PREFIX = "synth-run: progress: "  # rank 0's lines, which the launcher shows on stderr
TAG_SPAN = 32768  # MPI guarantees tags up to 32767 (MPI_TAG_UB)


class Compiled:
    """A rank's plan bound to its buffers for one size: per step its persistent MPI requests
    (MPI_Recv_init into the receive scratch, MPI_Send_init from the buffer or the pack scratch) and
    the numpy views its packing and its receipts' copies and reductions work on, all made once, so
    a step is Startall, the packs, Waitall, the copies, the reductions."""

    def __init__(self, comm, plan, buffer: np.ndarray, receive: np.ndarray, pack: np.ndarray):
        from synth.collectives.schedule import COPY

        self.steps = []
        for step, (sends, receipts) in enumerate(plan.steps):
            tag = step % TAG_SPAN
            requests, packs, copies, reductions = [], [], [], []
            at = 0
            for message in receipts:
                view = receive[at:at + message.elements]
                at += message.elements
                requests.append(comm.Recv_init(view, message.peer, tag))
                k = 0
                for start, length in zip(message.starts.tolist(), message.lengths.tolist()):
                    pair = (buffer[start:start + length], view[k:k + length])
                    (copies if message.op == COPY else reductions).append(pair)
                    k += length
            at = 0
            for message in sends:
                if message.contiguous:
                    start = int(message.starts[0])
                    data = buffer[start:start + int(message.lengths[0])]
                else:
                    data = pack[at:at + message.elements]
                    at += message.elements
                    k = 0
                    for start, length in zip(message.starts.tolist(), message.lengths.tolist()):
                        packs.append((data[k:k + length], buffer[start:start + length]))
                        k += length
                requests.append(comm.Send_init(data, message.peer, tag))
            self.steps.append((requests, packs, copies, reductions))

    def run(self) -> None:
        """One run of the schedule at this rank (module docstring)."""
        from mpi4py import MPI

        copyto, add = np.copyto, np.add
        for requests, packs, copies, reductions in self.steps:
            for target, source in packs:  # before any receipt lands: the step's sends read its start
                copyto(target, source)
            MPI.Prequest.Startall(requests)
            MPI.Request.Waitall(requests)
            for target, source in copies:  # copies first, then reductions (synth.collectives.verify's order)
                copyto(target, source)
            for target, source in reductions:
                add(target, source, out=target)

    def free(self) -> None:
        for requests, *_ in self.steps:
            for request in requests:
                request.Free()


def _initial(plan, data, rank: int) -> np.ndarray:
    """This rank's buffer at the start: its blocks' values (reductions: its contributions) and a
    sentinel in every other slot, so a block never delivered shows in the check."""
    from synth.collectives.schedule import collective
    from synth.run.data import DTYPES
    from synth.run.plan import starting_blocks

    dtype = DTYPES[data.dtype]
    sentinel = np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else np.nan
    buffer = np.full(plan.elements, sentinel, dtype=dtype)
    held = starting_blocks(data.schedule, rank)
    if len(held):
        starts, lengths = plan.block_range(held)
        values = data.values(held, rank if collective(data.schedule.collective).reduction else None)
        k = 0
        for start, length in zip(starts.tolist(), lengths.tolist()):
            buffer[start:start + length] = values[k:k + length]
            k += length
    return buffer


def _first_difference(plan, data, rank: int, buffer: np.ndarray, expected: np.ndarray) -> str | None:
    from synth.run.plan import promised_blocks

    promised = promised_blocks(data.schedule, rank)
    got = plan.gather(buffer, promised)
    if len(got) != len(expected):
        return f"rank {rank} holds {len(got)} elements of its promised blocks, the library's result has {len(expected)}"
    tolerance = data.tolerance(promised)
    if tolerance is None:  # equal (the library's result has no NaN: a NaN left is a block never delivered)
        wrong = got != expected
    else:
        wrong = ~(np.abs(got.astype(np.float64) - expected.astype(np.float64)) <= tolerance)
    if not wrong.any():
        return None
    k = int(np.argmax(wrong))
    lengths = data.elements[promised]
    block_at = int(np.searchsorted(np.cumsum(lengths), k, side="right"))
    block = int(promised[block_at])
    element = k - int(np.concatenate([[0], np.cumsum(lengths)])[block_at])
    shown = lambda v: "never delivered" if (got.dtype.kind == "f" and np.isnan(v)) or (  # noqa: E731
        got.dtype.kind == "i" and v == np.iinfo(got.dtype).min) else f"{v!r}"
    return (f"rank {rank}, block {block}, element {element}: the schedule left {shown(got[k].item())}, the library's "
            f"collective {expected[k].item()!r}" + ("" if tolerance is None else f" (allowed difference {tolerance[k]:.3g})")
            + f"; {int(wrong.sum()):,} elements differ at this rank")


def _timed(comm, once, iterations: int, warmup: int, before=None) -> list[float]:
    """Each iteration's time, the most any rank took (seconds)."""
    from mpi4py import MPI

    times = np.zeros(iterations)
    for i in range(warmup + iterations):
        if before is not None:
            before()
        comm.Barrier()
        start = MPI.Wtime()
        once()
        if i >= warmup:
            times[i - warmup] = MPI.Wtime() - start
    most = np.empty_like(times)
    comm.Allreduce(times, most, MPI.MAX)
    return most.tolist()


def run_job(comm, job: dict) -> list[dict] | None:
    """Every schedule of the job (`schedules`: paths; one launch runs many) at every size at this
    rank; rank 0 returns the figures per schedule (the others None)."""
    from mpi4py import MPI

    out = [run_one(comm, path, job) for path in job["schedules"]]
    if comm.Get_rank() != 0:
        return None
    library = MPI.Get_library_version().replace("\x00", "").splitlines()[0].strip()
    return [dict(figures, library=library) for figures in out]


def run_one(comm, path: str, job: dict) -> dict | None:
    from synth.io.schedule_file import read_schedule
    from synth.run.data import DTYPES, Input, library_call
    from synth.run.plan import block_elements, plan_rank

    rank = comm.Get_rank()
    schedule = read_schedule(path).explicit()
    if comm.Get_size() != schedule.ranks:
        raise ValueError(f"'{path}' has {schedule.ranks} ranks, this MPI run {comm.Get_size()}")
    dtype = DTYPES[job["dtype"]]
    itemsize = np.dtype(dtype).itemsize
    sizes = []
    for size in job["sizes"] or [None]:
        elements = block_elements(schedule, itemsize, size)
        data = Input(schedule, elements, job["dtype"], job["data"], job["seed"])
        plan = plan_rank(schedule, rank, elements)
        start = _initial(plan, data, rank)
        buffer = start.copy()
        receive, pack = np.empty(plan.most_received, dtype=dtype), np.empty(plan.most_sent, dtype=dtype)
        compiled = Compiled(comm, plan, buffer, receive, pack)
        ours = _timed(comm, compiled.run, job["iterations"], job["warmup"], before=lambda: np.copyto(buffer, start))
        compiled.free()
        library = library_call(comm, data, rank)
        theirs = _timed(comm, library.call, job["iterations"], job["warmup"])
        verdicts = comm.gather(_first_difference(plan, data, rank, buffer, library.result()), root=0)
        if rank == 0:
            per = schedule.ranks if schedule.collective in ("alltoall", "alltoallv") else 1
            sizes.append({"bytes": int(elements.sum()) * itemsize // per, "elements": int(elements.sum()),
                          "schedule_seconds": ours, "library_seconds": theirs, "library_call": library.name,
                          "wrong": next((v for v in verdicts if v is not None), None),
                          "ranks_wrong": sum(v is not None for v in verdicts)})
        if rank == 0:
            print(f"{PROGRESS_PREFIX}{schedule.collective} by {schedule.algorithm}: {sizes[-1]['bytes']:,} B run "
                  f"{job['warmup'] + job['iterations']} times, next to {library.name}", flush=True)
        del buffer, start, receive, pack, library, compiled
    return {"schedule": path, "sizes": sizes} if rank == 0 else None


def main(argv: list[str]) -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        with open(argv[0], encoding="utf-8") as f:
            job = json.load(f)
        if job.get("pids"):  # where the launcher finds the ranks to stop (Open MPI gives each its own group)
            with open(os.path.join(job["pids"], f"rank-{comm.Get_rank()}.pid"), "w", encoding="utf-8") as f:
                f.write(str(os.getpid()))
        result = run_job(comm, job)
    except Exception as exc:  # noqa: BLE001 - one line from the rank that failed, then every rank ends
        print(f"{ERROR_PREFIX}rank {comm.Get_rank()}: {type(exc).__name__}: {' '.join(str(exc).split())}",
              file=sys.stderr, flush=True)
        comm.Abort(3)
        return 3
    if result is not None:
        target = job["result"]
        with open(target + ".part", "w", encoding="utf-8") as f:
            json.dump(result, f)
        os.replace(target + ".part", target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
