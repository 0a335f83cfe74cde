"""Virtual lanes as OpenSM can load them: a QoS policy file that gives each (source, destination)
port pair a service level, and an OpenSM option file mapping service level l to virtual lane l.

InfiniBand picks a packet's lane per hop from its service level (SL2VL tables), and the subnet
manager hands out the SL of a path (PathRecord) by its QoS policy, which matches port groups: a
policy can tell flows apart by their end ports only. So a routes file's lanes must agree for all
paths between the same two terminals (lanes_by_pair refuses otherwise). Lane 0 is OpenSM's
default SL 0 (no rule; OpenSM requires the qos-level named "default"); every other lane l gets, per
source terminal, one rule whose destination group lists the terminals that source reaches on lane l.
Sections without entries are left out (OpenSM refuses an empty one): one lane is the default level
alone. The SL2VL mapping is the identity on the lanes used (qos_sl2vl: SL l -> VL l; unused SLs go
to VL0). Format: OpenSM's QoS_management_in_OpenSM.txt (docs/formats.md gives an example).
"""

from __future__ import annotations

import numpy as np

from synth.core.errors import SynthError
from synth.io.switch_tables import node_guid, terminal_port_guids
from synth.topology.network import Network

POLICY_FILE, OPTIONS_FILE = "qos-policy.conf", "opensm-qos.conf"
SERVICE_LEVELS = 16


def lanes_by_pair(src: np.ndarray, dst: np.ndarray, lanes: np.ndarray) -> dict[tuple[int, int], int]:
    """The lane of every (source, destination) pair with a path; one pair on two lanes is refused."""
    out: dict[tuple[int, int], int] = {}
    for s, d, lane in zip(src.tolist(), dst.tolist(), lanes.tolist()):
        if s == d:
            continue
        if out.setdefault((s, d), lane) != lane:
            raise SynthError(f"terminals {s} -> {d} have paths on lanes {out[(s, d)]} and {lane}: a QoS policy gives "
                             "one service level per pair of ports, so their lanes cannot be loaded into OpenSM")
    return out


def render_policy(network: Network, pair_lanes: dict[tuple[int, int], int]) -> str:
    guids = terminal_port_guids(network).tolist()
    names = network.node_names
    used = sorted({lane for lane in pair_lanes.values()})
    groups, rules = [], []
    by_source: dict[tuple[int, int], list[int]] = {}
    for (s, d), lane in sorted(pair_lanes.items()):
        if lane > 0:
            by_source.setdefault((s, lane), []).append(d)
    sources: set[int] = set()
    for (s, lane), targets in sorted(by_source.items()):
        source, target = f"src-{names[s]}", f"dst-{names[s]}-vl{lane}"
        if s not in sources:  # one group per source terminal, before its first rule
            sources.add(s)
            groups.append(_group(source, [guids[s]]))
        groups.append(_group(target, [guids[d] for d in targets]))
        rules.append(f"    qos-match-rule\n        source: {source}\n        destination: {target}\n"
                     f"        qos-level-name: VL{lane}\n    end-qos-match-rule\n")
    levels = "".join(f"    qos-level\n        name: VL{lane}\n        sl: {lane}\n    end-qos-level\n"
                     for lane in used if lane > 0)
    # OpenSM's parser refuses an empty section ("Syntax error" at end-port-groups): with one lane
    # there are no groups and no rules, and the policy is the required default level alone.
    sections = [f"port-groups\n{''.join(groups)}end-port-groups\n"] if groups else []
    sections.append(f"qos-levels\n    qos-level\n        name: default\n        sl: 0\n    end-qos-level\n{levels}"
                    "end-qos-levels\n")
    sections += [f"qos-match-rules\n{''.join(rules)}end-qos-match-rules\n"] if rules else []
    return (f"# QoS policy of synth's virtual lanes: {len(used)} lane{'s' * (len(used) != 1)}, {len(rules)} "
            f"rule{'s' * (len(rules) != 1)} (SL l -> VL l).\n"
            "# Paths on lane 0 match no rule and get the default SL 0.\n\n" + "\n".join(sections))


def _group(name: str, guids: list[int]) -> str:
    return f"    port-group\n        name: {name}\n        port-guid: {', '.join(node_guid(g) for g in guids)}\n    end-port-group\n"


def sl2vl(lanes_used: int) -> list[int]:
    return [sl if sl < lanes_used else 0 for sl in range(SERVICE_LEVELS)]


def render_options(lanes_used: int) -> str:
    """OpenSM options (its -F file) that enable QoS with the identity SL-to-VL mapping."""
    mapping = ",".join(str(v) for v in sl2vl(lanes_used))
    return ("# OpenSM options for synth's virtual lanes: load with opensm -F opensm-qos.conf -Y qos-policy.conf\n"
            f"qos TRUE\nqos_max_vls {max(lanes_used, 1)}\nqos_sl2vl {mapping}\n"
            f"qos_ca_sl2vl {mapping}\nqos_swe_sl2vl {mapping}\nqos_sw0_sl2vl {mapping}\nqos_rtr_sl2vl {mapping}\n")


def parse_policy(text: str, where: str = "QoS policy") -> tuple[dict[str, set[int]], list[tuple[str, str, int]]]:
    """(port groups: name -> port GUIDs, rules: (source group, destination group, SL)) of a policy
    in the subset render_policy writes; used by opensm-check to find each flow's SL as OpenSM's
    rules give it. A block without its fields, a GUID that is not a number or a rule naming a
    group or level the policy lacks is one user error."""
    groups: dict[str, set[int]] = {}
    levels: dict[str, int] = {}
    rules: list[tuple[str, str, int]] = []
    block: dict[str, str] = {}
    try:
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            key, _, value = (part.strip() for part in line.partition(":"))
            if key in ("name", "port-guid", "sl", "source", "destination", "qos-level-name"):
                block[key] = value
            elif key == "end-port-group":
                groups[block["name"]] = {int(g, 16) for g in block["port-guid"].split(",") if g.strip()}
                block = {}
            elif key == "end-qos-level":
                levels[block["name"]] = int(block["sl"])
                block = {}
            elif key == "end-qos-match-rule":
                rule = (block["source"], block["destination"], block["qos-level-name"])
                for kind, name, known in (("port group", rule[0], groups), ("port group", rule[1], groups),
                                          ("qos-level", rule[2], levels)):
                    if name not in known:
                        raise SynthError(f"{where}: a rule names the {kind} '{name}', which the policy does not define")
                rules.append((rule[0], rule[1], levels[rule[2]]))
                block = {}
    except KeyError as missing:
        raise SynthError(f"{where}: a block ends without its {missing.args[0]!r} field") from None
    except ValueError as exc:
        raise SynthError(f"{where}: {exc}") from None
    return groups, rules
