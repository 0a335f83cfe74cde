"""synth's one cost model (synth.pricing.alphabeta) and the bound of any schedule under it
(synth.pricing.bounds), across every family, collective, algorithm and size:

- every collective x every applicable algorithm x one network of every family: `synth schedule`
  generates, verifies and prices it on the family's default router, and no printed estimate (the
  model's, the seed's closed form) falls below the printed lower bound;
- `synth compare` on every family: no algorithm below the bound column at any size;
- the bound itself recomputed here from its definition on small cases (dissemination: ceil(log_{1+k}
  p) alphas; the bytes that must cross the nodes' links);
- a node's ports: one per router link where the node is its own router, its one link otherwise;
- algorithms that need a family are refused elsewhere in one line;
- the size priced is the size printed.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth.pricing.alphabeta import node_ports, step_times
from synth.collectives.algorithms import ALGORITHMS
from synth.collectives.schedule import COLLECTIVES
from synth.topology import parse_topology


# One network of every family (the smallest that most algorithms accept).
FAMILY_SPECS = {
    "xgft": "xgft:2:4,4:1,2",
    "dragonfly": "dragonfly:1,2,1",
    "hyperx": "hyperx:3,4",
    "2dfc": "2dfc:4,4",
    "torus": "torus:4,4",
    "kautz": "kautz:2",
    "slimfly": "slimfly:5",
    "mlfm": "mlfm:3",
    "oft": "oft:4",
}
SIZES = ("1", "4096", "1048576")


def _cases():
    for family, spec in FAMILY_SPECS.items():
        for name in COLLECTIVES:
            for _, algorithm in ALGORITHMS.items():
                if name in algorithm.collectives:
                    yield pytest.param(spec, name, algorithm.name, id=f"{family}-{name}-{algorithm.name}")


def _extra(name: str, algorithm: str, ranks: int) -> list[str]:
    out = []
    if name == "p2p":
        out += ["--peer", str(ranks - 1)]
    if name == "alltoallv":
        out += ["--sizes", "random:3000:7"]
    return out


def _cells(line: str) -> list[str]:
    """A row of compare's table: columns are two or more spaces apart (labels such as "tuna r=2" have one)."""
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


def _us(pattern: str, text: str) -> float | None:
    found = re.search(pattern, text)
    return float(found.group(1)) if found else None


@pytest.mark.parametrize("spec,name,algorithm", list(_cases()))
def test_no_printed_estimate_is_below_the_printed_bound(run, spec, name, algorithm):
    """Every applicable pair is generated, verified and priced on the family's default router; the
    refused ones say why in one line (exit 2)."""
    ranks = parse_topology(spec).network().num_terminals
    for size in SIZES:
        code, out, err = run("schedule", name, "--algorithm", algorithm, "--network", spec, "--bytes", size,
                             *_extra(name, algorithm, ranks))
        if code == 2:  # the algorithm does not apply here: one line naming why
            assert err.count("\n") == 1 and out == "", err
            return
        assert code == 0, err
        assert "verified  every" in out
        estimate = _us(r"alpha-beta ([0-9.e+]+) us", out)
        bound = _us(r"lower bound ([0-9.e+]+) us", out)
        assert estimate is not None and bound is not None, out
        # printed with 4 significant digits: compare with that rounding's tolerance
        assert estimate >= bound * (1 - 1e-3), out
        seed = _us(r"seed .* = ([0-9.e+]+) us \(measured", out)
        if seed is not None:
            assert seed >= bound * (1 - 1e-3), out
        router = parse_topology(spec).default_router
        assert f"cost      {router} routes" in out


@pytest.mark.parametrize("spec", list(FAMILY_SPECS.values()))
def test_compare_never_prices_below_the_bound(run, spec):
    for name in ("allreduce", "alltoall", "allgather", "broadcast", "reduce"):  # compare covers the rooted ones too
        code, out, err = run("compare", name, "--network", spec, "--bytes", "32B..64MiB")
        if code == 2:
            assert err.count("\n") == 1
            continue
        assert code == 0, err
        header = _cells(out.splitlines()[1])
        assert header[-2:] == ["bound", "best"]
        for line in out.splitlines()[2:]:
            cells = _cells(line)
            if not cells or not cells[0][0].isdigit():
                continue
            times, bound = [float(v.replace(",", "")) for v in cells[1:-2]], float(cells[-2].replace(",", ""))
            assert min(times) >= bound * (1 - 1e-3), line


def test_the_default_router_is_the_family_s():
    assert parse_topology("xgft:2:4,4:1,2").default_router == "dmodk"
    for spec in FAMILY_SPECS.values():
        if not spec.startswith("xgft"):
            assert parse_topology(spec).default_router == "minimal"


def test_collectives_run_on_fat_trees(run):
    for argv in (("schedule", "allreduce", "--algorithm", "ring", "--network", "xgft:3:8,4,2:1,8,2"),
                 ("compare", "allreduce", "--network", "xgft:3:8,4,2:1,8,2", "--bytes", "1KiB,1MiB")):
        code, out, err = run(*argv)
        assert code == 0, err
        assert "dmodk routes" in out


def test_report_takes_the_collectives_router(run, tmp_path):
    out = tmp_path / "r.md"
    code, _, err = run("report", "xgft:2:4,4:1,4", "--patterns", "lin", "--routers", "dmodk", "--collectives", "allreduce",
                       "--collective-bytes", "1KiB", "--collective-router", "smodk", "--out", out, "--quiet")
    assert code == 0, err
    assert "on smodk routes" in out.read_text()
    code, _, err = run("report", "xgft:2:4,4:1,4", "--patterns", "lin", "--routers", "dmodk", "--collective-bytes", "1KiB",
                       "--out", tmp_path / "s.md", "--quiet")
    assert code == 2 and "--collectives" in err and not (tmp_path / "s.md").exists()


# ----- ports ------------------------------------------------------------------------------------

def test_a_node_that_is_its_own_router_has_a_port_per_router_link():
    """Counted here from the family's definition, not from synth's network arrays."""
    assert node_ports(parse_topology("torus:4,4").network()) == 4  # 2 per dimension
    assert node_ports(parse_topology("2dfc:4,4").network()) == 6  # (4 - 1) + (4 - 1)
    assert node_ports(parse_topology("kautz:3").network()) == 3  # d out-links
    assert node_ports(parse_topology("torus:4,4:p=2").network()) == 1  # separate terminals: their one link
    assert node_ports(parse_topology("dragonfly:2,4,2").network()) == 1
    assert node_ports(parse_topology("xgft:2:4,4:1,2").network()) == 1
    assert node_ports(parse_topology("xgft:2:4,4:1,2").network(), ranks_per_node=2) == 2  # and a memory port


def test_step_times_are_the_model():
    # 3 messages from the busiest port and 5000 B on the busiest channel at 8 Gb/s: 3 alpha + 5 us
    assert step_times([3], [5000.0], alpha=1e-6, bandwidth_bits=8e9)[0] == pytest.approx(3e-6 + 5e-6)


# ----- the bound, recomputed --------------------------------------------------------------------

def _schedule(spec, name, algorithm, size, extra=()):
    from synth.pricing.schedule_cost import map_schedule
    from synth.collectives.algorithms import Request, grid_shape
    from synth.collectives.verify import expected_blocks

    topology = parse_topology(spec)
    p = topology.network().num_terminals
    blocks = expected_blocks(name, p) or p
    request = Request(name, p, blocks, size, topology.spec, 0, grid_shape(topology), *extra)
    schedule = ALGORITHMS[algorithm].generate(request)
    return topology, schedule, map_schedule(schedule, topology)


@pytest.mark.parametrize("spec,k", [("torus:4,4", 4), ("2dfc:4,4", 6), ("dragonfly:1,2,1", 1), ("xgft:2:4,4:1,2", 1)])
def test_allreduce_bound_from_its_definition(spec, k):
    """Dissemination: a rank starts k messages per alpha, so information from one rank reaches at most
    (1 + k)^L ranks after L alphas; gossip: every element of n bytes is sent 2(p - 1) times in all,
    through p links of the node's injection bandwidth."""
    topology, schedule, mapped = _schedule(spec, "allreduce", "ring", 1000)
    p = schedule.ranks
    alphas = 0
    while (1 + k) ** alphas < p:
        alphas += 1
    assert mapped.bound.messages == alphas
    n = schedule.block_bytes.sum()
    inject = k if topology.network().nodes_are_routers else 1  # the terminal link's bandwidth
    assert mapped.bound.bandwidth.busiest == pytest.approx(2 * (p - 1) * n / (p * inject))
    assert mapped.messages >= mapped.bound.messages
    assert mapped.channel_bytes.sum() >= mapped.bound.bandwidth.busiest * (1 - 1e-12)


def test_alltoall_bound_counts_what_must_leave_each_node():
    topology, schedule, mapped = _schedule("dragonfly:1,2,1", "alltoall", "pairwise", 100)
    p = schedule.ranks
    assert mapped.bound.messages == math.ceil(math.log2(p))  # one port per terminal
    assert mapped.bound.bandwidth.busiest == pytest.approx((p - 1) * 100)  # its p - 1 blocks through its one link
    # pairwise sends one block per step: p - 1 steps, one message each
    assert mapped.messages == p - 1


def test_rooted_collectives_need_one_message_when_data_flows_in():
    topology, schedule, mapped = _schedule("torus:4,4", "gather", "binomial", 10)
    assert mapped.bound.messages == 1
    # the root receives the 15 other blocks through its link of bandwidth 4
    assert mapped.bound.bandwidth.busiest == pytest.approx(15 * 10 / 4)


# ----- refusals and the size priced -------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["do", "md"])
def test_2dfc_algorithms_are_refused_on_a_torus(run, algorithm):
    code, out, err = run("schedule", "allreduce", "--algorithm", algorithm, "--network", "torus:8,8")
    assert code == 2 and out == "" and err.count("\n") == 1 and "2dfc" in err
    code, out, _ = run("compare", "allreduce", "--network", "torus:4,4", "--bytes", "1KiB")
    header = out.splitlines()[1].split()
    assert "do" not in header and "md" not in header


def test_the_size_priced_is_the_size_printed(run):
    code, out, _ = run("schedule", "allreduce", "--algorithm", "rd-b", "--network", "torus:4,4", "--bytes", "1000")
    assert code == 0
    assert "16 blocks of 63 B; --bytes 1,000 rounded up to 1,008 B (16 blocks of whole bytes), the size priced" in out
    assert "n 1,008 B" in out  # what the models price
    code, out, _ = run("schedule", "allreduce", "--algorithm", "rd-b", "--network", "torus:4,4", "--bytes", "1024")
    assert "rounded" not in out


def test_alltoall_prints_no_allreduce_model(run):
    code, out, _ = run("schedule", "alltoall", "--algorithm", "bruck", "--network", "torus:4,4")
    assert code == 0 and "DeSensi24 eq. 1" not in out and "T_opt" not in out
    code, out, _ = run("schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:4,4")
    assert "DeSensi24 eq. 1" in out


def test_one_step_algorithms_pay_for_their_messages(run):
    """A port starts one message at a time: spread-out's P - 1 messages from one terminal cost P - 1
    alphas, so at small sizes Bruck's log P steps win (the old model gave spread-out every size)."""
    code, out, _ = run("compare", "alltoall", "--network", "dragonfly:2,4,2", "--bytes", "32B,64MiB")
    assert code == 0
    rows = {line.split()[0]: line.split()[-1] for line in out.splitlines()[2:] if line[:1] == " " and line.split()[0][0].isdigit()}
    assert rows["32B"] != "spread-out"
    assert "crossovers: none" not in out


def test_mapped_time_is_linear_in_block_bytes():
    _, schedule, mapped = _schedule("torus:4,4", "allreduce", "swing-b", 1 << 20)
    alpha, bandwidth = 1e-6, 100e9
    half = mapped.time(alpha, bandwidth, 0.5)
    full = mapped.time(alpha, bandwidth)
    latency = mapped.time(alpha, bandwidth, 0.0)
    assert latency == pytest.approx(alpha * mapped.messages)
    assert full - latency == pytest.approx(2 * (half - latency))
    assert np.all(mapped.port_messages >= 1)


@pytest.mark.parametrize("spec", ["xgft:2:4,4:1,2", "torus:2,4", "dragonfly:1,2,1"])
@pytest.mark.parametrize("name,algorithm", [("allreduce", "ring"), ("allreduce", "rabenseifner"), ("alltoall", "bruck"),
                                            ("alltoallv", "tuna-coalesced"), ("alltoallv", "tuna-staggered"),
                                            ("broadcast", "binomial"), ("gather", "binomial"), ("allgather", "bruck")])
def test_several_ranks_per_node_stay_above_the_bound(run, spec, name, algorithm):
    """Ranks of one node share its links and start their copies at their own memory ports."""
    extra = ["--sizes", "random:3000:7"] if name == "alltoallv" else []
    for size in SIZES:
        code, out, err = run("schedule", name, "--algorithm", algorithm, "--network", spec, "--ranks-per-node", "2",
                             "--bytes", size, *extra)
        if code == 2:
            assert err.count("\n") == 1
            return
        assert code == 0, err
        assert _us(r"alpha-beta ([0-9.e+]+) us", out) >= _us(r"lower bound ([0-9.e+]+) us", out) * (1 - 1e-3), out


def test_compare_figure_marks_crossovers_on_a_size_axis():
    from synth.report.plots import collective_figure
    from synth.core.sizes import size_text
    from synth.pricing.compare import compare

    topology = parse_topology("dragonfly:2,4,2")
    sizes = [32 << k for k in range(0, 25, 2)]
    result = compare("alltoall", topology, sizes, None, 1e-6, 100e9)
    figure = collective_figure(result, topology.label())
    axes = figure.axes[0]
    labels = [t.get_text() for t in axes.get_xticklabels()]
    assert labels and all(re.fullmatch(r"\d+(B|KiB|MiB|GiB)", t) for t in labels), labels
    assert labels[0] == "32B" and labels[-1] == size_text(sizes[-1])
    marks = [line for line in axes.get_lines() if list(line.get_xdata())[:1] * 2 == list(line.get_xdata())]
    assert len(result.crossovers()) >= 1 and len(marks) == len(result.crossovers())
    texts = [t.get_text() for t in axes.texts]
    for size, _, after in result.crossovers():
        assert f"best from {size_text(size)}:\n{after}" in texts
    bound = [line for line in axes.get_lines() if line.get_label() == "lower bound (any schedule)"]
    assert len(bound) == 1 and np.allclose(bound[0].get_ydata(), result.bounds * 1e6)


@settings(max_examples=30, deadline=None)
@given(nodes=st.integers(1, 7), q=st.integers(1, 3), parts=st.integers(1, 2), seed=st.integers(0, 2 ** 32 - 1))
def test_alltoall_bytes_that_must_move_counted_naively(nodes, q, parts, seed):
    """Per node the bytes of blocks to and from other nodes, counted here block by block."""
    from synth.pricing.bounds import _alltoall_moves

    p = nodes * q
    sizes = np.random.default_rng(seed).integers(0, 3, parts * p * p)
    out_of, into = np.zeros(nodes), np.zeros(nodes)
    pairs_with_bytes = set()
    for b, size in enumerate(sizes.tolist()):
        s, d = (b % (p * p)) // p, (b % (p * p)) % p
        if size:
            pairs_with_bytes.add((s, d))
        if s // q != d // q:
            out_of[s // q] += size
            into[d // q] += size
    moves = _alltoall_moves(sizes, p, q, nodes)
    assert np.allclose(moves.out_of, out_of) and np.allclose(moves.into, into) and moves.total == out_of.sum()
    assert moves.every_pair_moves == all((s, d) in pairs_with_bytes for s in range(p) for d in range(p) if s != d)
