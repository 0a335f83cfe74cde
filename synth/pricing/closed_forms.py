"""The seeds' closed forms of a schedule's time, printed next to what synth measures on the routed
schedule (synth schedule): DeSensi24 Table 2 through eq. 1 for the torus allreduces, Pham26 Table 3.2 for
Kautz K(d,2), Pham26's (4.5), (4.6) and the corrected MULTITREE count for 2dfc all-to-all, with (4.4) as a
step lower bound. None where no seed gives one."""

from __future__ import annotations

import math
from dataclasses import dataclass

from synth.pricing.deficiency import table2
from synth.collectives.schedule import Schedule
from synth.topology.family import GRID_ALLTOALL_FORMS, KAUTZ_FORMS, TORUS_ALLREDUCE_FORMS

TABLE_2 = ("ring", "rd-l", "rd-b", "bucket", "swing-l", "swing-b")


@dataclass(frozen=True)
class ClosedForm:
    source: str  # the seed's equation or table
    formula: str
    seconds: float
    steps_lower_bound: int | None = None


def closed_form(schedule: Schedule, topology, alpha: float, beta: float) -> ClosedForm | None:
    """The seed's closed form of the schedule's time where one holds on the network
    (Topology.closed_forms) for its collective and algorithm."""
    forms = topology.closed_forms()
    name, algorithm, p = schedule.collective, schedule.algorithm, schedule.ranks
    total = float(schedule.block_bytes.sum())
    if TORUS_ALLREDUCE_FORMS in forms and algorithm in TABLE_2 and name == "allreduce":
        d = topology.dimensions
        lam, psi, xi = table2(algorithm, p, d)
        seconds = math.log2(p) * alpha * lam + total / d * beta * psi * xi
        return ClosedForm("DeSensi24 eq. 1, Table 2", f"log2(p) alpha {lam:.4g} + (n/D) beta {psi:.4g} x {xi:.4g}", seconds)
    if KAUTZ_FORMS in forms and algorithm in ("kautz-c", "kautz-m"):
        return _kautz(schedule, topology.kautz_degree(), algorithm, alpha, beta)
    if GRID_ALLTOALL_FORMS in forms and name == "alltoall":
        m1, m2 = topology.sizes
        b = total / (p * p)  # the bytes from one rank to another (md splits each in two parts)
        bound = math.ceil((m1 * m2 - 1) / (m1 + m2 - 2))
        if algorithm == "do":
            return ClosedForm("Pham26 (4.5)", "2 alpha + (m1 + m2) b beta", 2 * alpha + (m1 + m2) * b * beta)
        if algorithm == "md":
            return ClosedForm("Pham26 (4.6)", "2 alpha + max(m1, m2) b beta", 2 * alpha + max(m1, m2) * b * beta)
        if algorithm == "multitree" and m1 == m2 and m1 % 2 == 0:
            m = m1
            return ClosedForm("Pham26 Table 4.2, corrected (the table is a step short for even m)",
                              "(m/2 + 1) alpha + (m + 1) b beta", (m // 2 + 1) * alpha + (m + 1) * b * beta, bound)
    return None


def _kautz(schedule: Schedule, d: int, algorithm: str, alpha: float, beta: float) -> ClosedForm | None:
    n = d * (d + 1)
    name = schedule.collective
    total = float(schedule.block_bytes.sum())
    m = {"allgather": total / n, "reduce-scatter": total / n, "alltoall": total / n}.get(name, total)
    rooted = {  # the same for both: one tree per root
        "broadcast": ("2(alpha + M beta)", 2, 2), "reduce": ("2(alpha + M beta)", 2, 2),
        "scatter": ("2 alpha + (d+2) M/(d(d+1)) beta", 2, (d + 2) / n),
        "gather": ("2 alpha + (d+2) M/(d(d+1)) beta", 2, (d + 2) / n),
    }
    combined = {
        "allgather": ("2 alpha + (d+1) M beta", 2, d + 1), "reduce-scatter": ("2 alpha + (d+1) M beta", 2, d + 1),
        "allreduce": ("4 alpha + 2M/d beta", 4, 2 / d), "alltoall": ("2 alpha + (2d+1) M/(d(d+1)) beta", 2, (2 * d + 1) / n),
    }
    trees = {
        "allgather": ("(d+1)(alpha + M beta)", d + 1, d + 1), "reduce-scatter": ("(d+1)(alpha + M beta)", d + 1, d + 1),
        "allreduce": ("2(d+1) alpha + 2M/d beta", 2 * (d + 1), 2 / d),
        "alltoall": ("(d+1) alpha + (2d+1) M/(d(d+1)) beta", d + 1, (2 * d + 1) / n),
    }
    forms = {**rooted, **(combined if algorithm == "kautz-c" else trees)}
    if name not in forms:
        return None
    formula, alphas, betas = forms[name]
    return ClosedForm("Pham26 Table 3.2", formula, alphas * alpha + betas * m * beta)
