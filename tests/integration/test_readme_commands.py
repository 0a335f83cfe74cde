"""Every command the README shows runs, and the figures its comments quote are what synth prints
(issue 41, item 6). The commands are read from the README's own code blocks (indented by four
spaces), so that the test follows the README: a block is one test, its commands run in order in one
working directory (later commands read what earlier ones wrote), on the bundled instances.

A command that takes minutes runs on a stated smaller input (SMALLER: the README's text -> what runs
and why); a stale entry (its command no longer in the README) fails. A comment's figures (`# contention
8 against a bound of 1`) must each appear in the command's output, and so must a status word
(optimal, impossible, ...); a figure in brackets (`(was 6.006)`) is history, not checked. The few
blocks that run OpenSM, SimGrid or Dask are integration tests, as the others of tests/integration:
OpenSM's run here, SimGrid's and Dask's skip where the package is missing (outside CI)."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex

import pytest

from helpers import REPO
from synth.simulation import simgrid_module

README = REPO / "README.md"

# The README's set-up commands: `make test` is what runs this test, `make demo` installs synth (the demo's
# routing runs below as `synth route instances/table3.1/xgft256.toml` would: tests/slow/test_exchanges.py).
NOT_RUN = {
    "make demo": "installs synth (pip): its two commands are tests/slow's 256-leaf OPT exchange",
    "make test": "runs the test suite, this test included",
    "synth route ... --executor dask:tcp://head-node:8786": "a placeholder for a cluster of the reader's",
}

# README command -> (what runs instead, why): each a smaller input of the same command.
SMALLER = {
    "synth route slimfly:5 --traffic worst-case --router paths":
        ("synth route slimfly:5 --traffic worst-case --router paths --time-limit 5", "a solver budget of 5 units"),
    "synth report dragonfly:2,4,2 --opensm minhop,dfsssp --out df.html":
        ("synth report dragonfly:2,4,2 --opensm minhop,dfsssp --patterns randperm:1 --routers minimal,paths "
         "--out df.html", "the whole exchanges take minutes: one random permutation"),
    "synth route dragonfly:2,4,2 --traffic a2a-lin --router paths --vls 2 --out r.json":
        ("synth route dragonfly:2,4,2 --traffic a2a-lin --phase 0-7 --router paths --vls 2 --time-limit 1 "
         "--out r.json", "72 phases take minutes: 8 of them, 1 unit per phase"),
    "synth route instances/table3.1/xgft512.toml --router layered --out opt512.json":
        ("synth route instances/table3.1/xgft512.toml --router layered --phase 0-3 --out opt512.json",
         "512 phases take minutes: 4 of them"),
    "synth route xgft:2:32,32:1,32 --traffic a2a-lin --router dmodk --out a2a.h5":
        ("synth route xgft:2:32,32:1,32 --traffic a2a-lin --phase 0-63 --router dmodk --out a2a.h5",
         "64 of the 1024 phases (65,536 flows)"),
    "synth report instances/table3.1/xgft64.toml --opensm minhop,ftree --out report.html":
        ("synth report instances/table3.1/xgft64.toml --opensm minhop,ftree --patterns opt --routers dmodk,layered "
         "--out report.html", "one exchange, two routers"),
    "synth route instances/table3.1/xgft1024.toml --router layered --out r.json --checkpoint ck/":
        ("synth route instances/table3.1/xgft1024.toml --router layered --phase 0-1 --out r.json --checkpoint ck/",
         "2 of the 1024 phases"),
    "synth route instances/table3.1/xgft1024.toml --router layered --out r.json --executor dask":
        ("synth route instances/table3.1/xgft1024.toml --router layered --phase 0-1 --out r2.json --executor dask",
         "2 of the 1024 phases (into r2.json: r.json is the checkpointed run's)"),
    "synth synthesize allreduce --network hyperx:3,3 --bytes 1MiB --out ar.json":
        ("synth synthesize allreduce --network hyperx:3,3 --bytes 1MiB --time-limit 10 --out ar.json",
         "10 s of programs"),
    "synth synthesize allreduce --network graph:instances/gpu/dgx1-cube-mesh.gml --bytes 256MiB":
        ("synth synthesize allreduce --network graph:instances/gpu/dgx1-cube-mesh.gml --bytes 256MiB --time-limit 10",
         "10 s of programs"),
    "synth compare allgather --network torus:4,4 --synthesize":
        ("synth compare allgather --network torus:4,4 --bytes 32B,64MiB --synthesize --time-limit 10",
         "the two sizes the README quotes, 10 s of programs"),
    "synth synthesize alltoallv --network torus:4,4 --sizes random:65536:1 --out v.json":
        ("synth synthesize alltoallv --network torus:4,4 --sizes random:65536:1 --time-limit 5 --out v.json",
         "the README's --time-limit 5 run (8.5 s), the same schedule"),
    "synth synthesize allreduce --network torus:8,8 --bytes 32":
        ("synth synthesize allreduce --network torus:8,8 --bytes 32 --time-limit 20",
         "20 s of programs (3.033 us here: within the README's 3.03)"),
    "synth synthesize alltoall --network dragonfly:2,4,2 --bytes 1MiB --routes-out a2a.json":
        ("synth synthesize alltoall --network dragonfly:2,4,2 --bytes 1MiB --time-limit 5 --routes-out a2a.json",
         "5 s of programs"),
}

# README command -> (a phrase of the README's text about it, the figures of that phrase its output shows): the prose's
# figures, checked as the comments' are (the phrase must be in the README as written, the figures in the phrase).
QUOTED = {
    "synth compare allgather --network torus:4,4 --synthesize":
        ("32 B: 2.002 us against Bruck's 4.004, bound 2.001; 64 MiB: 1262 us against MULTITREE's 1683 and the ring's "
         "5048, bound 1260", ["2.002", "4.004", "2.001", "1262", "1683", "5048", "1260"]),
    "synth synthesize allreduce --network graph:instances/gpu/dgx1-cube-mesh.gml --bytes 256MiB":
        ("256 MiB: 9,824 us against 10,741, bound 9,397", ["9,824", "9,397"]),
    "synth synthesize alltoall --network torus:8,8 --bytes 32B..256MiB":
        ("the 8x8 torus 21,500 us against spread-out's 26,880 (bound 21,480)", ["21,500", "21,480"]),
}

STATUS_WORDS = ("optimal", "feasible", "impossible", "satisfiable", "unknown")


def readme_blocks() -> list[list[tuple[int, str]]]:
    """The README's code blocks (lines indented by four spaces after a blank line), each a list of
    (line number, text without the indentation)."""
    blocks, current, blank = [], [], True
    for number, line in enumerate(README.read_text().splitlines(), 1):
        if line.startswith("    ") and (current or blank):
            current.append((number, line[4:]))
        elif current:
            blocks.append(current)
            current = []
        blank = not line.strip()
    return blocks + ([current] if current else [])


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment): the comment is what follows ' #' outside quotes."""
    match = re.search(r"\s#\s", line)
    return (line[:match.start()].rstrip(), line[match.end():].strip()) if match else (line.rstrip(), "")


def figures(comment: str) -> list[str]:
    """The figures of a comment that output must show: its numbers and status words, less what is in
    brackets (history, equation numbers) and powers (10^6)."""
    text = re.sub(r"\([^)]*\)", " ", comment)
    text = re.sub(r"\d+\^\d+", " ", text)
    text = re.sub(r"\beq\.\s*[\d.]+", " ", text)
    numbers = re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])", text)
    words = [w for w in STATUS_WORDS if re.search(rf"\b{w}\b", text)]
    return [n.replace(",", "") for n in numbers] + words


NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]\d+)?(?![\w])")


def shows(output: str, figure: str) -> bool:
    """Whether the output prints the figure: a status word as a word, a number as a number of any
    style (1,262, 1262, 1.262e+03); a figure with decimals as a number that rounds to it (the README's
    3.03 for a time printed 3.026 or 3.033)."""
    if figure.isalpha():
        return re.search(rf"\b{figure}\b", output) is not None
    plain = re.sub(r"(?<=\d),(?=\d{3})", "", output)
    figure = figure.replace(",", "")
    value, decimals = float(figure), len(figure.partition(".")[2])
    return any(float(n) == value or (decimals and round(float(n), decimals) == value) for n in NUMBER.findall(plain))


def block_id(block) -> str:
    return f"README.md:{block[0][0]}"


def needs(block) -> str | None:
    """What a block needs beyond synth: 'simgrid', 'dask' or None (OpenSM is installed by make test and
    run, as by every test of tests/integration)."""
    text = " ".join(line for _, line in block)
    if re.search(r"synth simulate|--simulate\b", text):
        return "simgrid"
    if "--executor dask" in text:
        return "dask"
    return None


BLOCKS = readme_blocks()


def test_the_readme_has_the_blocks_this_test_runs():
    commands = {split_comment(line)[0] for block in BLOCKS for _, line in block}
    assert {"make demo", "make test"} <= commands  # the two set-up commands, exactly as they are
    stale = [c for c in [*SMALLER, *NOT_RUN, *QUOTED] if c not in commands]
    assert not stale, f"no longer in the README: {stale}"
    prose = " ".join(README.read_text().split())
    for command, (phrase, quoted) in QUOTED.items():
        assert phrase in prose, f"the README no longer says {phrase!r}"
        assert all(f in phrase for f in quoted), phrase
    assert sum(1 for c in commands if c.startswith("synth ")) >= 40


def test_the_readmes_limits_are_the_codes():
    """Limits the README states in prose, against the constants they are (issue 41: `vls --exact` said 2,000 paths
    in --help and 50,000 in the README)."""
    from synth.routing.lanes import MAX_EXACT_PATHS

    prose = " ".join(README.read_text().split())
    assert f"the model takes up to {MAX_EXACT_PATHS:,} paths" in prose


def _run_python(code: str) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})  # noqa: S102 - the README's own example
    return out.getvalue()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("block", BLOCKS, ids=block_id)
def test_the_readme_block_runs_and_prints_its_figures(block, run, tmp_path, monkeypatch):
    need = needs(block)
    if need == "simgrid" and not simgrid_module.available():
        pytest.skip("SimGrid's Python module is not installed")
    if need == "dask" and importlib.util.find_spec("distributed") is None and os.environ.get("CI") != "true":
        pytest.skip("Dask is not installed (the cluster extra)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "instances").symlink_to(REPO / "instances")
    if block[0][1].startswith("import synth"):  # the Python example
        out = _run_python("\n".join(line for _, line in block))
        assert out.strip(), "the README's Python example printed nothing"
        return
    for number, line in block:
        command, comment = split_comment(line)
        if command in NOT_RUN:
            continue
        shown, _ = SMALLER.get(command, (command, ""))
        for part in shown.split(" && "):
            words = shlex.split(part)
            assert words[0] == "synth", f"README.md:{number}: not a synth command: {part}"
            code, out, err = run(*words[1:])
            assert code == 0, f"README.md:{number}: {part} exited {code}: {err.strip()[-2000:]}"
        quoted = [f.replace(",", "") for f in QUOTED.get(command, ("", []))[1]]
        missing = [f for f in figures(comment) + quoted if not shows(out, f)]
        assert not missing, f"README.md:{number}: {command}: {missing} not in its output:\n{out[-3000:]}"


def test_make_demo_runs_from_a_fresh_clone(tmp_path):
    """`make demo`'s own commands (its `install` prerequisite aside) in a copy of a fresh clone's
    layout, where no output directory exists yet (synth makes none for --out): with the 16-leaf
    Table 3.1 instance for the 256-leaf one, which tests/slow routes whole."""
    import subprocess
    import sys

    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.MULTILINE).group(1)
    lines = [line.strip().split("  #")[0] for line in recipe.splitlines()]
    assert lines[0].startswith("mkdir -p out") and len(lines) == 3
    (tmp_path / "instances").symlink_to(REPO / "instances")
    for line in lines:
        line = line.replace("$(PYTHON)", shlex.quote(sys.executable)).replace("xgft256.toml", "xgft16.toml")
        done = subprocess.run(line, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=240,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, f"{line}: {done.stderr}"
    assert "OK" in done.stdout or "ok" in done.stdout.lower(), done.stdout
