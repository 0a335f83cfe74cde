"""`synth topology SPEC [--format text|json|ibnetdiscover] [--out FILE]`: a network's facts, its JSON form, or
its topology file as `ibnetdiscover` writes it (which ibsim loads and `fabric:FILE` reads)."""

from __future__ import annotations

import argparse
import json
import sys

from synth.cli import options as o
from synth.core.declared import declared
from synth.core.errors import SynthError
from synth.core.output import OutputSet


def family_list() -> str:
    """The network families and their spec syntax, for `synth topology --help` (synth.topology's
    FAMILIES, read from the family modules' source: synth.core.declared)."""
    lines = ["network families (SPEC):"]
    for family in declared("synth.topology", "FAMILY", "Family", ("name", "syntax", "description")):
        lines.append(f"  {family.syntax}")
        lines.append(f"      {family.description}")
    return "\n".join(lines)


def add_parser(sub) -> None:
    p = sub.add_parser("topology", help="summarize a network or write it as JSON", epilog=family_list(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_spec(p)
    p.add_argument("--format", choices=["text", "json", "ibnetdiscover"], default="text",
                   help="text (default): the family's facts; json: nodes, ports and channels; ibnetdiscover: the "
                        "topology file ibnetdiscover writes, which ibsim loads and fabric:FILE reads (docs/formats.md)")
    p.add_argument("--out", metavar="FILE", help="write the JSON or ibnetdiscover form here instead of stdout")
    p.set_defaults(func=cmd_topology)


def cmd_topology(args) -> int:
    if args.out is not None and args.format == "text":
        raise SynthError("--out writes the network as a file: add --format json or --format ibnetdiscover")
    _, topology, network = o.load(args)
    if args.format == "text":
        from synth.render import console

        print(console.topology_summary(topology, network))
        return 0
    if args.format == "json":
        text = json.dumps(network.to_json_dict(), separators=(",", ":")) + "\n"
    else:
        from synth.io.switch_tables import check_cabled_both_ways, render_fabric

        check_cabled_both_ways(network)
        text = render_fabric(network)
    with OutputSet() as outputs:
        target = outputs.reserve(args.out) if args.out is not None else None
        if target is None:
            sys.stdout.write(text)
        else:
            target.write(text)
    return 0
