from synth.core.memory import prefer_plain_pages

prefer_plain_pages()  # the tests run commands in this process: as the synth command does for its own (before numpy)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from synth.cli import main  # noqa: E402
from synth.topology import parse_topology  # noqa: E402

# [Prisacari20] Table 2.1 (half bisection, M_L = 2) and Table 3.1.
TABLE_2_1 = {
    16: "xgft:3:4,2,2:1,4,1",
    32: "xgft:3:4,4,2:1,4,2",
    64: "xgft:3:8,4,2:1,8,2",
    128: "xgft:3:8,8,2:1,8,4",
    256: "xgft:4:8,4,4,2:1,8,4,2",
    512: "xgft:4:8,8,4,2:1,8,8,2",
    1024: "xgft:4:8,8,8,2:1,8,8,4",
}
TABLE_3_1 = {
    16: "xgft:2:8,2:1,4",
    32: "xgft:3:4,4,2:1,4,2",
    64: "xgft:3:8,4,2:1,8,2",
    128: "xgft:3:8,8,2:1,8,4",
    256: "xgft:4:8,4,4,2:1,8,4,2",
    512: "xgft:4:8,8,4,2:1,8,8,2",
    1024: "xgft:4:16,8,4,2:1,16,8,2",
    2048: "xgft:5:8,8,4,4,2:1,8,8,4,2",
    4096: "xgft:5:8,8,8,4,2:1,8,8,8,2",
    8192: "xgft:5:8,8,8,8,2:1,8,8,8,4",
}


@pytest.fixture
def run(capsys):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""

    def _run(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def xgft_and_network(spec):
    xgft = parse_topology(spec)
    return xgft, xgft.network()


def hop_channels(network, paths):
    """Channel ids along node paths, found by the network's independent (src, dst) lookup."""
    out = []
    for path in paths:
        if len(path) > 1:
            hops = network.find_channels(np.asarray(path[:-1]), np.asarray(path[1:]))
            assert (hops >= 0).all()
            out.append(hops)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def legacy_routes(doc: dict) -> dict:
    """A synth-routes/2 document as the first version recorded it: every channel path as the node
    ids it visits, from the source terminal (docs/formats.md), format synth-routes/1. For the tests
    that keep the /1 reader and checker covered."""
    network = parse_topology(doc["topology"]["spec"]).network()
    heads = network.channel_dst.tolist()
    doc["format"] = "synth-routes/1"
    for record in doc["phases"]:
        record["paths"] = [[flow[0]] + [heads[c] for c in path] for flow, path in zip(record["flows"], record["paths"])]
    return doc


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
