"""Running a simulation in a worker process (synth.simulation.worker) and reading its times back.

The worker is a fresh `python -m synth.simulation.worker`: SimGrid's Engine is one per process, its
log lines go to the worker's stderr (kept, for the one-line error of a failed run), its progress
lines are passed on. An interrupt of the parent kills the worker; the worker ends itself should
the parent die (synth.core.interrupt.quiet_worker).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

import numpy as np

from synth.core.errors import SynthError
from synth.simulation import simgrid_module
from synth.simulation.platform import Platform, Transfers, check_size
from synth.simulation.worker import PROGRESS

MODELS = ("LV08", "CM02", "SMPI", "IB")
DEFAULT_MODEL = "LV08"  # SimGrid's own default
# said in the output whenever the default was not chosen: LV08's factors are fitted to TCP, not to InfiniBand
DEFAULT_MODEL_NOTE = ("model     LV08, SimGrid's default: its factors (latency x 13.01, bandwidth x 0.97) are calibrated on "
                      "TCP; for an InfiniBand-like network choose --model IB (or CM02, plain max-min sharing)")
DISCIPLINES = ("bsp", "async")


@dataclass(frozen=True)
class Settings:
    model: str = "LV08"  # SimGrid's network model (its default)
    discipline: str = "bsp"  # bulk-synchronous steps, or asynchronous ranks
    overhead: float = 0.0  # seconds a rank spends on each message it sends, one after another
    engine: str = ""  # "driver" or "actors"; by default, the driver for bsp and actors for async


@dataclass(frozen=True)
class Times:
    start: np.ndarray  # per transfer, when SimGrid started it (seconds)
    finish: np.ndarray  # per transfer, when its last byte arrived
    done: np.ndarray | None  # per transfer, when its receiver had copied it too (Transfers.copy; None: no copies)
    end: float  # when the simulation ended
    version: str  # SimGrid's
    run_times: np.ndarray  # (runs, scales) seconds of each replay (run), when runs were asked for
    peak_bytes: int = 0  # the worker process's peak resident memory (measured; it varies from run to run)


def engine_of(settings: Settings) -> str:
    return settings.engine or ("driver" if settings.discipline == "bsp" else "actors")


def run(platform: Platform, transfers: Transfers, rank_host: np.ndarray, settings: Settings,
        progress=None, runs: tuple[np.ndarray, np.ndarray] | None = None) -> Times:
    """Simulate `transfers` on `platform`; `progress(text)` gets the worker's progress lines (None:
    the worker prints none). `runs` (bulk-synchronous only): (run_steps, scales), the steps
    run_steps[r]:run_steps[r+1] replayed once per entry of scales[r] (a transfer's bytes are its
    `bytes` times the scale, rounded to whole bytes), each on the idle network; their times come back
    as run_times."""
    if settings.model not in MODELS:
        raise ValueError(settings.model)
    simgrid_module.locate(settings.model)  # SynthError (one line) when SimGrid is missing
    engine = engine_of(settings)
    check_size(platform, transfers, len(rank_host) if engine == "actors" else 1)
    extra = {}
    if runs is not None:
        if engine != "driver":
            raise ValueError("runs are replayed by the bulk-synchronous driver")
        extra = {"run_steps": np.asarray(runs[0], dtype=np.int64), "scales": np.asarray(runs[1], dtype=np.float64)}
    with tempfile.TemporaryDirectory(prefix="synth-simulate-") as folder:
        source, target = os.path.join(folder, "in.npz"), os.path.join(folder, "out.npz")
        np.savez(source, **pack(platform, transfers, rank_host, settings, progress is not None, **extra))
        _run_worker([source, target, str(os.getpid())], progress)
        with np.load(target) as result:
            return Times(start=result["start"], finish=result["finish"],
                         done=result["done"] if transfers.copy is not None else None, end=float(result["clock"][0]),
                         version=str(result["version"]), run_times=result["run_times"],
                         peak_bytes=int(result["peak_kb"][0]) * 1024)


def pack(platform: Platform, transfers: Transfers, rank_host, settings: Settings, progress: bool = False,
         **extra) -> dict:
    """The worker's input (synth.simulation.worker.build and simulate): arrays and settings by name."""
    return dict(hosts=platform.hosts, link_bandwidth=platform.link_bandwidth, link_latency=platform.link_latency,
                route_src=platform.route_src, route_dst=platform.route_dst, route_ptr=platform.route_ptr,
                route_links=platform.route_links, step=transfers.step, src_host=transfers.src_host,
                dst_host=transfers.dst_host, src_rank=transfers.src_rank, dst_rank=transfers.dst_rank,
                bytes=transfers.bytes, rank_host=np.asarray(rank_host, dtype=np.int64), model=settings.model,
                copy=transfers.copy if transfers.copy is not None else np.zeros(transfers.count),
                engine=engine_of(settings), barrier=settings.discipline == "bsp", overhead=settings.overhead,
                progress=progress, **extra)


def _run_worker(arguments: list[str], progress) -> None:
    process = subprocess.Popen([sys.executable, "-m", "synth.simulation.worker", *arguments], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    kept: list[str] = []
    said: list[str] = []  # the worker's own lines

    def read() -> None:
        for line in process.stderr:
            if line.startswith(PROGRESS):
                said.append(line[len(PROGRESS):].rstrip("\n"))
                if progress is not None and not said[-1].startswith("cannot load"):
                    progress(said[-1])
            elif line.strip() and "[xbt_cfg/INFO]" not in line:  # not SimGrid's note on its contexts
                kept.append(line.rstrip("\n"))
                del kept[:-40]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    reader.join()
    if code == simgrid_module.LOAD_FAILED and said:
        raise SynthError(said[-1])
    unknown = next((line for line in kept if "Unable to find network model" in line), None)
    if unknown is not None:  # e.g. IB in a SimGrid built without SMPI (PyPI's default), named by SYNTH_SIMGRID
        raise SynthError(f"SimGrid: {unknown[unknown.index('Unable'):].strip()}")
    if code < 0:
        import signal

        raise RuntimeError(f"the SimGrid worker was killed by {signal.Signals(-code).name}"
                           + (" (the system's out-of-memory killer sends SIGKILL)" if code == -signal.SIGKILL else ""))
    if code != 0:
        detail = next((line for line in reversed(kept) if "Error" in line or "error" in line), kept[-1] if kept else "")
        raise RuntimeError(f"the SimGrid worker ended with exit code {code}: {detail.strip()}")
