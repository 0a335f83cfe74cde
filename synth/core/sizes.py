"""Message sizes as every command takes them: one parser, one range syntax, one range of values.

A size is a whole number of bytes with an optional binary unit: `4096`, `4096B`, `64KiB`, `1MiB`,
`2GiB`, `1TiB` (the unit's case is free: `64kib` too), in ASCII digits with nothing around them (no
space, sign, '_' or fraction, as synth.core.validate's integers). A list of sizes is one size, `A..B` (A, 2A,
4A, ... up to B: powers of two times A) or `A,B,C` (as given). Every message size is between
MIN_SIZE (1 B: a message of no bytes is no message) and MAX_SIZE (1 TiB); the commands that take one
size (`route`, `bounds`, `schedule`, `report --bytes`, an instance's `[traffic] bytes`) and those that
take a list (`compare`, `synthesize`, `report --collective-bytes`) read them here. The one exception,
stated where it is taken: alltoallv's `--sizes random:S:SEED`, whose S is the largest block (blocks
are uniform in [0, S]), so 0 is a size there (an exchange of empty blocks).
"""

from __future__ import annotations

import re

from synth.core.errors import SynthError
from synth.core.validate import show

UNITS = {"B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
MIN_SIZE = 1
MAX_SIZE = 1 << 40
MAX_SIZES = 64  # sizes a list or range may give
SYNTAX = "a whole number of bytes, with or without a unit B, KiB, MiB, GiB or TiB (4096, 64KiB, 1MiB)"
LIST_SYNTAX = "one size, A..B (powers of two times A) or A,B,... (sizes such as 4096, 64KiB, 1MiB)"

# [0-9], not \d: a regex's \d matches any Unicode digit ('٣٢', '３２'), which int() would take
_SIZE = re.compile(r"([0-9]+)([A-Za-z]*)", flags=re.ASCII)  # nothing around it, as integers (synth.core.validate)


def size_text(n: int) -> str:
    """The shortest exact form: 1MiB, 1536B, 64KiB."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def _bounds(minimum: int) -> str:
    return f"between {minimum:,} B and 1 TiB"


def parse_size(text: str, what: str = "--bytes", minimum: int = MIN_SIZE) -> int:
    """One size (see the module): bytes, from `minimum` to MAX_SIZE; a one-line SynthError naming
    `what` (the option or field) and the value otherwise."""
    match = _SIZE.fullmatch(text) if isinstance(text, str) else None
    unit = match.group(2).upper() if match else None
    if not match or unit not in UNITS and unit != "":
        raise SynthError(f"{what} {show(text)}: expected {SYNTAX}")
    digits = match.group(1).lstrip("0")
    value = int(digits[:16] or "0") * UNITS.get(unit or "B")  # 16 digits are beyond 1 TiB in any unit
    if not minimum <= value <= MAX_SIZE or len(digits) > 16:
        raise SynthError(f"{what} {show(text)} must be {_bounds(minimum)}")
    return value


def parse_sizes(text: str, what: str = "--bytes") -> list[int]:
    """One size, `A..B` (powers of two times A up to B) or `A,B,C`: at most MAX_SIZES of them."""
    if not isinstance(text, str):
        raise SynthError(f"{what} {show(text)}: expected {LIST_SYNTAX}")
    if ".." in text:
        low, high = (parse_size(t, what) for t in text.split("..", 1))
        if high < low:
            raise SynthError(f"{what} {show(text)} runs backwards")
        sizes = [low << k for k in range(0, 64) if low << k <= high]
    else:
        sizes = [parse_size(t, what) for t in text.split(",")]
    if len(sizes) > MAX_SIZES:
        raise SynthError(f"{what} {show(text)} gives {len(sizes)} sizes, more than {MAX_SIZES}")
    return sizes


def parse_one_size(text: str, what: str = "--bytes") -> int:
    """One size where a command takes one: a list or range is refused in one line (it is the
    syntax of compare and synthesize, which price or synthesize several)."""
    if isinstance(text, str) and (".." in text or "," in text):
        parse_sizes(text, what)  # a bad size in it is named as such
        raise SynthError(f"{what} {show(text)}: expected one size here (a range A..B or a list A,B is what "
                         "synth compare and synth synthesize take)")
    return parse_size(text, what)


def size_option(what: str = "--bytes", many: bool = False):
    """An argparse type: one size, or (`many`) a list of sizes."""
    return (lambda text: parse_sizes(text, what)) if many else (lambda text: parse_one_size(text, what))


def message_size(value: object, what: str) -> int:
    """A size from a file (an instance's `[traffic] bytes`): an integer of bytes or a size string."""
    from synth.core.validate import require_int

    if isinstance(value, str):
        return parse_one_size(value, what)
    if isinstance(value, int) and not isinstance(value, bool):
        if not MIN_SIZE <= value <= MAX_SIZE:
            raise SynthError(f"{what} must be {_bounds(MIN_SIZE)}, got {value}")
        return value
    return require_int(value, what)  # the one message for anything else
