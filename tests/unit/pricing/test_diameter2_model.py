"""Prisacari20 ch.7's closed forms for low-diameter topologies (synth.pricing.diameter2_model), with the
seed's numbers (sec. 7.2, digest ../shared/spec/hierarchical-dragonfly-diameter2.md)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from synth.pricing.diameter2_model import fat_tree, figure_7_3, hyperx_2d, mlfm, oft, slim_fly, slim_fly_for
from synth.topology import parse_topology


def test_slim_fly_q13_costs_of_sec_7_2():
    # "for q = 13, selecting p = 10 results in a cost of 2.9 ports and 1.95 links per endpoint,
    # while selecting p = 9 results in 3.11 ports and 2.05 links per endpoint"
    ceil, floor = slim_fly_for(13), slim_fly_for(13, 9)
    assert (ceil.terminals, ceil.routers, ceil.radix) == (3380, 338, 29)
    assert (floor.terminals, floor.radix) == (3042, 28)
    # The seed cuts to two decimals: 6253 / 3042 = 2.0556 links is printed 2.05 (rounding gives 2.06).
    cut = lambda x: math.floor(x * 100) / 100  # noqa: E731
    assert cut(ceil.ports_per_terminal) == 2.9 and cut(ceil.links_per_terminal) == 1.95
    assert cut(floor.ports_per_terminal) == 3.11 and cut(floor.links_per_terminal) == 2.05
    assert floor.links_per_terminal == pytest.approx(6253 / 3042)
    assert floor.worst_case == Fraction(1, 18)  # 1/(2p)


def test_slim_fly_q_must_be_a_prime_power_of_the_right_form():
    assert slim_fly_for(5).routers == 50 and slim_fly_for(5).radix == 7 + 4
    assert slim_fly_for(6) is None and slim_fly_for(10) is None and slim_fly_for(4) is not None
    assert slim_fly(29).spec == "slimfly:13" and slim_fly(28).spec != "slimfly:13"


def test_mlfm_and_oft_of_ch7():
    assert (mlfm(30).terminals, mlfm(30).routers, mlfm(30).worst_case) == (3600, 360, Fraction(1, 15))
    assert mlfm(64).terminals == 33792  # the digest's erratum: h = 32, not the text's swapped count
    assert (oft(24).terminals, oft(24).routers, oft(24).worst_case) == (3192, 399, Fraction(1, 12))
    assert (oft(8).terminals, oft(8).routers) == (104, 39)
    assert oft(14).spec == "oft:6"  # k = 7 has k - 1 = 6, not prime: the largest valid k is 6


def test_hyperx_and_fat_trees():
    hx = hyperx_2d(30)
    assert (hx.terminals, hx.routers, hx.ports_per_terminal, hx.links_per_terminal) == (1210, 121, 3.0, 2.0)
    assert (fat_tree(16, 2).terminals, fat_tree(16, 2).routers) == (128, 24)
    assert (fat_tree(16, 3).terminals, fat_tree(16, 3).routers, fat_tree(16, 3).diameter) == (1024, 320, 4)


@pytest.mark.parametrize("r", [8, 16])
def test_fat_tree_specs_build_what_the_closed_forms_say(r):
    for levels in (2, 3):
        config = fat_tree(r, levels)
        network = parse_topology(config.spec).network()
        assert (network.num_terminals, network.num_switches) == (config.terminals, config.routers)
        assert network.cost_per_endpoint() == (config.ports_per_terminal, config.links_per_terminal)


def test_figure_7_3_lists_every_family():
    assert [c.family for c in figure_7_3(24)] == ["2D HyperX", "Slim Fly", "2-level fat tree", "3-level fat tree",
                                                  "MLFM", "OFT"]


def test_model_command(run):
    code, out, err = run("model", "diameter2", "--radix", "24")
    assert code == 0 and err == ""
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("Slim", "MLFM", "OFT"))}
    assert rows["OFT"][1:5] == ["oft:12", "24", "3192", "399"] and rows["OFT"][-1] == "1/12"
    assert rows["MLFM"][1:5] == ["mlfm:12", "24", "1872", "234"]


@pytest.mark.parametrize("argv, message", [
    (["model", "diameter2", "--radix", "3"], "--radix must be between 4 and 256, got 3"),
    (["model", "diameter2"], "the following arguments are required: --radix"),
    (["model", "stencil", "xgft:2:4,4:1,4", "--alpha", "8x8", "--tasks", "4"], "is for dragonflies"),
    (["model", "nosuch"], "invalid choice"),
])
def test_model_command_bad_input(run, argv, message):
    code, out, err = run(*argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and out == ""
