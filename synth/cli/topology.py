"""`synth topology SPEC [--format text|json] [--out FILE]`: a network's facts, or its JSON form."""

from __future__ import annotations

import argparse
import json
import sys

from synth.cli import options as o
from synth.core.errors import SynthError
from synth.core.output import OutputSet
from synth.render import console


def family_list() -> str:
    """The network families and their spec syntax, for `synth topology --help`."""
    from synth.topology import FAMILIES

    lines = ["network families (SPEC):"]
    for family in FAMILIES.items():
        lines.append(f"  {family[1].syntax}")
        lines.append(f"      {family[1].description}")
    return "\n".join(lines)


def add_parser(sub) -> None:
    p = sub.add_parser("topology", help="summarize a network or write it as JSON", epilog=family_list(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_spec(p)
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="text (default): the family's facts; json: nodes, ports and channels (docs/formats.md)")
    p.add_argument("--out", metavar="FILE", help="write the JSON (with --format json) here instead of stdout")
    p.set_defaults(func=cmd_topology)


def cmd_topology(args) -> int:
    if args.out is not None and args.format != "json":
        raise SynthError("--out writes the JSON form of the network: add --format json")
    _, topology, network = o.load(args)
    if args.format != "json":
        print(console.topology_summary(topology, network))
        return 0
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        text = json.dumps(network.to_json_dict(), separators=(",", ":")) + "\n"
        if target is None:
            sys.stdout.write(text)
        else:
            target.write(text)
    return 0
