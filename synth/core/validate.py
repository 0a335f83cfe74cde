"""Validated input at the edges: integers that are integers, numbers that are finite, known keys.

Python's own conversions are too lenient for a tool whose inputs name hardware: int() accepts
' 8', '8_0' and non-ASCII digits such as '８', int(3.7) truncates, True is an int, and JSON and
TOML integers are unbounded. Every function here raises SynthError naming where the value came
from (`what`: a file and field, or an option), so a bad value is one line for the user.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Iterable, Mapping

from synth.core.errors import SynthError

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

_INTEGER = re.compile(r"-?[0-9]+")  # ASCII digits only, nothing around them
_DECIMAL = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")  # no sign, nan, inf or '_'
_SHOWN = 60  # characters of a bad value quoted in a message


def show(value: object) -> str:
    """A value quoted for a one-line message: repr, ASCII only, cut to a readable length."""
    text = ascii(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _in_range(value: int, what: str, minimum: int | None, maximum: int | None) -> int:
    low = INT64_MIN if minimum is None else minimum
    high = INT64_MAX if maximum is None else maximum
    if not low <= value <= high:
        if high == INT64_MAX and value > high:
            bounds = "within 64-bit integers"
        elif high == INT64_MAX:
            bounds = f"at least {low}" if low > INT64_MIN else "within 64-bit integers"
        else:
            bounds = f"between {low} and {high}"
        raise SynthError(f"{what} must be {bounds}, got {value}")
    return value


def parse_int(text: str, what: str, minimum: int | None = 0, maximum: int | None = None) -> int:
    """An integer written in ASCII digits (optional leading '-'), within [minimum, maximum] and int64."""
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        raise SynthError(f"{what} must be an integer, got {show(text)}")
    if len(text) > 20:  # beyond any int64: do not convert a megabyte of digits
        raise SynthError(f"{what} must be within 64-bit integers, got {show(text)}")
    return _in_range(int(text), what, minimum, maximum)


def parse_int_or_range(text: str, what: str, minimum: int, maximum: int) -> int | tuple[int, ...]:
    """`N` (an int) or `A..B` (every int from A to B, a tuple), each within [minimum, maximum]."""
    if ".." not in text:
        return parse_int(text, what, minimum, maximum)
    low, high = (parse_int(t, what, minimum, maximum) for t in text.split("..", 1))
    if high < low:
        raise SynthError(f"{what} {show(text)}: the range runs backwards")
    return tuple(range(low, high + 1))


def parse_int_list(text: str, what: str, count: int, minimum: int = 0) -> tuple[int, ...]:
    """`A,B,...`: exactly `count` ints of at least `minimum`."""
    items = text.split(",")
    if len(items) != count:
        raise SynthError(f"{what} {show(text)}: expected {count} numbers separated by commas")
    return tuple(parse_int(t, what, minimum) for t in items)


def require_int(value: object, what: str, minimum: int | None = 0, maximum: int | None = None) -> int:
    """A JSON or TOML value that must be an integer: not a bool, not a float (3.0 included)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SynthError(f"{what} must be an integer, got {show(value)}")
    return _in_range(value, what, minimum, maximum)


def parse_positive_number(text: str, what: str, maximum: float | None = None) -> float:
    """A finite number above zero written in ASCII (1, 0.5, 1e-6); no nan, inf or sign."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        raise SynthError(f"{what} must be a positive number, got {show(text)}")
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise SynthError(f"{what} must be a positive number, got {show(text)}")
    if maximum is not None and value > maximum:
        raise SynthError(f"{what} must be at most {maximum:g}, got {text}")
    return value


def parse_non_negative_number(text: str, what: str, maximum: float | None = None) -> float:
    """A finite number of zero or more written in ASCII (0, 0.5, 1e-6); no nan, inf or sign."""
    if isinstance(text, str) and _DECIMAL.fullmatch(text) and float(text) == 0:
        return 0.0
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text) or not math.isfinite(float(text)):
        raise SynthError(f"{what} must be a number of zero or more, got {show(text)}")
    return parse_positive_number(text, what, maximum)


def too_many_digits(text: str) -> str:
    """Why a JSON or TOML parser refused an integer literal with more digits than Python converts
    (sys.get_int_max_str_digits(), which keeps conversions from taking quadratic time): the line,
    and the key of a `key = value` line. Every such number is out of synth's ranges anyway."""
    limit = sys.get_int_max_str_digits()
    for number, line in enumerate(text.splitlines(), start=1):
        if re.search(r"[0-9_]{%d,}" % (limit + 1), line):
            key = re.match(r"\s*([^=\s]+)\s*=", line)
            named = f"the value of {show(key.group(1).strip(chr(34) + chr(39)))}" if key else "an integer"
            return f"line {number}: {named} has more than {limit} digits"
    return f"an integer has more than {limit} digits"


def require_str(value: object, what: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise SynthError(f"{what} must be a string, got {show(value)}")
    if not allow_empty and not value.strip():
        raise SynthError(f"{what} must not be empty")
    return value


def require_table(value: object, what: str) -> Mapping:
    if not isinstance(value, dict):
        raise SynthError(f"{what} must be a table/object, got {show(value)}")
    return value


def require_list(value: object, what: str) -> list:
    if not isinstance(value, list):
        raise SynthError(f"{what} must be a list, got {show(value)}")
    return value


def check_keys(mapping: Mapping, what: str, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
    """Unknown keys are errors reported by name (a misspelt key must not be silently ignored)."""
    allowed = tuple(allowed)
    for key in mapping:
        if key not in allowed:
            raise SynthError(f"{what}: unknown key {show(key)} (known: {', '.join(allowed)})")
    for key in required:
        if key not in mapping:
            raise SynthError(f"{what}: missing {show(key)}")


def read_text(path, what: str, max_bytes: int = 1 << 30) -> str:
    """A UTF-8 text file given by the user, or one line saying why it cannot be read. Files above
    `max_bytes` are refused before they are read (the callers parse them whole)."""
    from pathlib import Path

    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise SynthError(f"{what} '{path}' has {size:,} bytes, more than the {max_bytes:,} synth reads")
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SynthError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SynthError(f"{what} '{path}' is not UTF-8 text (byte {exc.start})") from None


def read_toml(path, kind: str, max_bytes: int) -> dict:
    """A TOML file given by the user (an instance file, a sweep file: `kind`), parsed; every failure
    one line naming "{kind} '{path}'". Files above `max_bytes` are refused unread."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise SynthError(f"cannot read {kind} '{path}': {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise SynthError(f"{kind} '{path}' is larger than {max_bytes} bytes: not {'an' if kind[0] in 'aeiou' else 'a'} "
                         f"{kind}")
    try:
        text = raw.decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise SynthError(f"{kind} '{path}' is not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SynthError(f"{kind} '{path}' is not valid TOML: {exc}") from None
    except ValueError:  # an integer beyond Python's digit limit
        raise SynthError(f"{kind} '{path}', {too_many_digits(text)}") from None


def require_readable(path, where: str) -> None:
    """One line when `path` cannot be opened, said as read_json and the readers say it ("cannot read
    {where}: ..."): a command asks before it imports its readers, so that a missing file costs no
    numpy (issue 41: a user error answers at once)."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise SynthError(f"cannot read {where}: {exc.strerror or exc}") from None


class _Malformed(Exception):
    pass


def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Malformed(f"the key {show(next(k for k in keys if keys.count(k) > 1))} appears twice in one object")
    return dict(pairs)


def _no_constant(name: str):
    raise _Malformed(f"{name} is not a number synth accepts")


def _finite(text: str) -> float:
    """A JSON number with a fraction or an exponent: 1e400 is Infinity spelt otherwise, refused as it is."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Malformed(f"{text[:40]} is beyond a double (Infinity), not a number synth accepts")
    return value


def read_json(path, where: str, kind: str, max_bytes: int, too_big_hint: str = ""):
    """A JSON file synth wrote (routes, schedules), parsed strictly: duplicated keys, NaN and
    Infinity (also as 1e400) are refused, and so is a file above `max_bytes` before it is read. Every
    failure is one line naming `where` ("routes file 'r.json'") and, for content, the `kind` it is not."""
    import os

    try:
        size = os.stat(path).st_size
        if size > max_bytes:
            raise SynthError(f"{where} has {size:,} bytes, more than the {max_bytes:,} synth reads whole{too_big_hint}")
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except OSError as exc:
        raise SynthError(f"cannot read {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SynthError(f"{where} is not UTF-8 text (byte {exc.start})") from None
    return parse_json(text, where, kind)


def parse_json(text: str, where: str, kind: str):
    """JSON text parsed as strictly as read_json parses a file (for JSON that a file holds inside, as an
    HDF5 file's attribute): one line naming `where` and the `kind` it is not."""
    import json

    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise SynthError(f"{where} is not JSON: {exc}") from None
    except ValueError:  # an integer beyond Python's digit limit (JSONDecodeError is caught above)
        raise SynthError(f"{where} is not a {kind}: {too_many_digits(text)}") from None
    except (_Malformed, RecursionError) as exc:
        raise SynthError(f"{where} is not a {kind}: {exc if isinstance(exc, _Malformed) else 'nested too deeply'}") from None
