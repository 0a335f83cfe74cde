"""The fixtures every part of the suite shares (tests/unit, tests/contract, tests/integration and the
on-demand tests/slow). Shared plain functions and constants are in tests/helpers.py."""

import os

# Every solver program ends at its deterministic work, never at a loaded machine's clock (synth.solve.budget):
# a figure a test asserts must not depend on what else the CI runner does. Commands the tests start inherit it.
os.environ["SYNTH_REPRODUCIBLE"] = "1"

from synth.core.memory import prefer_plain_pages

prefer_plain_pages()  # the tests run commands in this process: as the synth command does for its own (before numpy)

import pytest  # noqa: E402

from synth.cli import main  # noqa: E402
from synth.topology import parse_topology  # noqa: E402


@pytest.fixture
def run(capsys):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""

    def _run(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


@pytest.fixture
def assert_bad_spec(run):
    """A bad network spec: parse_topology raises one line naming `message`, and `synth topology`
    exits 2 with that one line on stderr and nothing on stdout."""
    from synth.core.errors import SynthError

    def check(spec: str, message: str) -> None:
        with pytest.raises(SynthError) as caught:
            parse_topology(spec)
        assert message in str(caught.value) and "\n" not in str(caught.value)
        code, out, err = run("topology", spec)
        assert code == 2 and out == "" and message in err
        assert len(err.strip().splitlines()) == 1 and err.startswith("synth: error:")

    return check
