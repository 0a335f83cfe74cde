"""One size syntax (synth.core.sizes) for every command that takes a size: the same values accepted,
the same one-line errors, the same range of values (1 B to 1 TiB), one list syntax."""

import pytest

from synth.core.errors import SynthError
from synth.core.sizes import MAX_SIZE, parse_one_size, parse_size, parse_sizes, size_text

NET = "torus:2,2"


def _report(tmp_path, option="--bytes"):
    extra = ["--collectives", "allgather"] if option == "--collective-bytes" else []
    return lambda size: ["report", NET, "--patterns", "a2a-lin", "--routers", "minimal", *extra, "--out",
                         tmp_path / "r.md", "--quiet", option, size]


def commands(tmp_path):
    """(name, option, argv of a size, takes a list): every command and option that takes a message size."""
    return [
        ("route", "--bytes", lambda s: ["route", NET, "--traffic", "a2a-lin", "--quiet", "--bytes", s], False),
        ("bounds", "--bytes", lambda s: ["bounds", NET, "--traffic", "a2a-lin", "--quiet", "--bytes", s], False),
        ("schedule", "--bytes", lambda s: ["schedule", "allgather", "--algorithm", "ring", "--network", NET, "--bytes", s],
         False),
        ("report", "--bytes", _report(tmp_path), False),
        ("compare", "--bytes", lambda s: ["compare", "allgather", "--network", NET, "--bytes", s], True),
        ("synthesize", "--bytes", lambda s: ["synthesize", "allgather", "--network", NET, "--method", "trees", "--quiet",
                                             "--bytes", s], True),
        ("report", "--collective-bytes", _report(tmp_path, "--collective-bytes"), True),
    ]


GOOD = ["4096", "4096B", "4KiB", "4kib", "1MiB", "0004KiB"]
BAD = ["", "0", "0KiB", "-1", "1.5KiB", " 4096", "4096 ", "4 KiB", "4KB", "4k", "+4", "4_096", "1e3", "0x10", "٣",
       "４", "2TiB", "1025GiB", "9" * 40, "KiB"]


@pytest.mark.parametrize("value", GOOD)
def test_every_command_takes_the_same_sizes(run, tmp_path, value):
    for name, option, argv, _ in commands(tmp_path):
        code, out, err = run(*argv(value))
        assert code == 0, (name, option, value, err)


@pytest.mark.parametrize("value", BAD, ids=[ascii(v) for v in BAD])
def test_every_command_refuses_a_bad_size_with_the_same_line(run, tmp_path, value):
    lines = {}
    for name, option, argv, _ in commands(tmp_path):
        code, out, err = run(*argv(value))
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("synth: error:"), (name, value, err)
        lines.setdefault(option, set()).add(err)
        assert not (tmp_path / "r.md").exists()
    assert all(len(errors) == 1 for errors in lines.values()), lines  # one message per option, whichever command
    assert lines["--bytes"] == {err.replace("--collective-bytes", "--bytes") for err in lines["--collective-bytes"]}


def test_bytes_empty_is_refused_not_the_default(run):
    # `synthesize --bytes ''` synthesized 1 MiB
    code, out, err = run("synthesize", "allgather", "--network", NET, "--quiet", "--bytes", "")
    assert code == 2 and "--bytes ''" in err and out == ""


def test_a_list_where_one_size_is_taken_is_one_line(run, tmp_path):
    for name, option, argv, many in commands(tmp_path):
        for value in ("1KiB..4KiB", "1KiB,4KiB"):
            code, out, err = run(*argv(value))
            if many:
                assert code == 0, (name, value, err)
            else:
                assert code == 2 and "expected one size here" in err and err.count("\n") == 1, (name, value, err)
        code, _, err = run(*argv("1KiB..0"))  # a bad size in a list is named as a bad size everywhere
        assert code == 2 and "--" in err and "between 1 B and 1 TiB" in err


def test_the_instance_file_takes_a_size_string(run, tmp_path):
    for value, ok in (("4096", True), ('"4KiB"', True), ('"1MiB"', True), ("0", False), ('""', False), ('"4 KiB"', False)):
        (tmp_path / "i.toml").write_text(f'[topology]\nspec = "{NET}"\n[traffic]\npattern = "a2a-lin"\nbytes = {value}\n')
        code, out, err = run("bounds", tmp_path / "i.toml")
        assert (code == 0) == ok, (value, err)
        if ok:
            size = 4096 if value in ("4096", '"4KiB"') else 1 << 20
            assert f"{size} B per message" in out
        else:
            assert "[traffic] bytes" in err and err.count("\n") == 1


def test_alltoallv_block_size_bound_takes_units_and_zero(run):
    # random:S:SEED's S is the largest block (uniform in [0, S]): 0 is a size there, stated in synth.core.sizes
    code, out, err = run("schedule", "alltoallv", "--algorithm", "pairwise", "--network", NET, "--sizes", "random:4KiB:1")
    assert code == 0, err
    code, out, err = run("schedule", "alltoallv", "--algorithm", "pairwise", "--network", NET, "--sizes", "random:1.5KiB:1")
    assert code == 2 and "--sizes random: S" in err


def test_the_parser():
    assert parse_size("1") == 1 and parse_size("64KiB") == 65536 and parse_size("1tib") == MAX_SIZE
    assert parse_sizes("1KiB..8KiB") == [1024, 2048, 4096, 8192]
    assert parse_sizes("3KiB..13KiB") == [3072, 6144, 12288]
    assert parse_sizes("8,4") == [8, 4]
    assert parse_one_size("8KiB") == 8192
    assert parse_size("0", "--sizes random: S", minimum=0) == 0
    for text in ("8KiB..1KiB", ",".join(["1"] * 65), "1..", "..1", "1,,2"):
        with pytest.raises(SynthError):
            parse_sizes(text)
    assert [size_text(n) for n in (1, 1536, 1024, 1 << 20, 3 << 30, MAX_SIZE)] == ["1B", "1536B", "1KiB", "1MiB", "3GiB",
                                                                                     "1TiB"]
    for n in (1, 1536, 1024, 1 << 20, 3 << 30, MAX_SIZE):
        assert parse_size(size_text(n)) == n
