"""The simulation file (`synth-simulation/1`, `synth simulate --out`): what was simulated, how, and
per row (step, size exchange or phase) the model's time next to SimGrid's.

    {"format": "synth-simulation/1",
     "kind": "schedule" | "routes",
     "source": {"collective", "algorithm", "network", "ranks", "ranks_per_node", "routes"} (schedule)
               {"pattern", "network", "ranks", "router", "phases"} (routes),
     "simulation": {"model", "discipline", "latency_s", "hop_latency_s", "bandwidth_gbps", "overhead_s", "alpha_s",
                    "simgrid", "hosts", "links", "routes"[, "flows"]},
     "rows": [{"row": "step 0", "transfers", "bytes", "model_us", "simulated_us", "end_us"}, ...],
     "total": {"model_us", "simulated_us", "ratio"[, "bound_us"]}}

Times are microseconds rounded to 1e-6 us (12 significant digits at most), so a rerun writes the
same bytes; nothing depends on the clock of the machine.
"""

from __future__ import annotations

import json
from typing import IO

FORMAT = "synth-simulation/1"


def _us(seconds: float) -> float:
    return float(f"{seconds * 1e6:.12g}")


def simulation_document(simulation) -> dict:
    rows = [{"row": label, "transfers": int(count), "bytes": int(size), "model_us": _us(model), "simulated_us": _us(sim),
             "end_us": _us(end)}
            for label, count, size, model, sim, end in zip(simulation.labels, simulation.transfers.tolist(),
                                                           simulation.bytes.tolist(), simulation.model.tolist(),
                                                           simulation.simulated.tolist(), simulation.ends.tolist())]
    model, simulated = simulation.model_total, simulation.simulated_total
    return {"format": FORMAT, "kind": simulation.kind, "source": simulation.source,
            "simulation": {**simulation.options.describe(), **simulation.platform}, "rows": rows,
            "total": {"model_us": _us(model), "simulated_us": _us(simulated),
                      "ratio": float(f"{simulated / model:.12g}") if model > 0 else None,
                      **({"bound_us": _us(simulation.bound)} if simulation.bound is not None else {})}}


def write_simulation(handle: IO[str], simulation) -> None:
    # never NaN or Infinity (not JSON: synth's own readers refuse them); a time that is one is a bug, said as such
    json.dump(simulation_document(simulation), handle, indent=1, allow_nan=False)
    handle.write("\n")
