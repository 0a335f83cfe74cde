#!/usr/bin/env bash
# Byte-identity of synth's outputs across a change (issue 23: "routes files, schedules, tables and the
# committed reports are byte-identical to before the change for the same inputs"): runs the same commands
# with the code of REV (a temporary clone) and with this checkout, and lists every output that differs.
#   tests/bench/compare_outputs.sh REV        e.g. tests/bench/compare_outputs.sh ea6d46a
set -euo pipefail
rev=${1:?usage: compare_outputs.sh REV}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$here" worktree add -q --detach "$work/before-src" "$rev"
trap 'git -C "$here" worktree remove --force "$work/before-src"; rm -rf "$work"' EXIT

outputs() {  # $1: the source tree whose synth runs, $2: the directory for the outputs
    mkdir -p "$2" && cd "$2"
    s() { PYTHONPATH="$1" python -m synth "${@:2}"; }
    s "$1" route xgft:2:4,4:1,4 --traffic a2a-lin --router layered --out xl.json --quiet > xl.txt
    s "$1" route xgft:2:4,4:1,4 --traffic a2a-opt --router monolithic --phase 0-3 --out xm.json --quiet > xm.txt
    s "$1" route xgft:2:4,4:1,4 --traffic a2a-opt --router layered --consistency destination --out xlc.json --quiet > xlc.txt
    s "$1" route xgft:2:4,4:1,4 --traffic a2a-opt --router random --seed 3 --out xr.json --quiet > xr.txt
    s "$1" route dragonfly:2,4,2 --traffic a2a-lin --router paths --phase 0-9 --out dp.json --quiet > dp.txt
    s "$1" route dragonfly:2,4,2 --traffic a2a-lin --router paths --phase 0-9 --vls 2 --out dpv.json --quiet > dpv.txt
    s "$1" route dragonfly:2,4,2 --traffic a2a-lin --router layered --phase 0-9 --out dl.json --quiet > dl.txt
    s "$1" route torus:4,4 --traffic a2a-lin --router dor --out td.json --quiet > td.txt
    s "$1" route slimfly:5 --traffic randperm:1 --router ugal --out su.json --quiet > su.txt
    s "$1" route hyperx:3,3 --traffic a2a-lin --router paths --candidates minimal --consistency destination --out hp.json --quiet > hp.txt
    for f in *.json; do s "$1" check "$f" > "${f%.json}.check"; done
    for f in xl dp td; do s "$1" tables "$f.json" --out "tables-$f" > "tables-$f.txt"; done
    s "$1" schedule allreduce --algorithm swing-b --network torus:4,4 --out sw.json > sw.txt
    s "$1" report dragonfly:2,4,2 --patterns a2a-lin --out r.md --quiet > /dev/null 2>&1
    s "$1" report xgft:2:4,4:1,4 --patterns lin --out rx.md --quiet > /dev/null 2>&1
    s "$1" bounds dragonfly:2,4,2 --traffic a2a-lin > b.txt
    # schedule synthesis: every method family on small networks (issue 40's move into synth/synthesis/)
    s "$1" synthesize allgather --network torus:4,4 --bytes 1KiB..1MiB --out sa --quiet > sa.txt
    s "$1" synthesize reduce-scatter --network hyperx:3,3 --bytes 256,1MiB --out sr --quiet > sr.txt
    s "$1" synthesize allreduce --network torus:4 --bytes 32,1MiB --out sar --quiet > sar.txt
    s "$1" synthesize allgather --network dragonfly:2,4,2 --bytes 1KiB,1MiB --out sd --quiet > sd.txt
    s "$1" synthesize allgather --network xgft:2:4,4:1,4 --method trees --bytes 1MiB --out sx.json --quiet > sx.txt
    s "$1" synthesize broadcast --network torus:4,4 --bytes 1KiB,64MiB --out sb --quiet > sb.txt
    s "$1" synthesize reduce --network dragonfly:2,4,2 --bytes 64MiB --out srd.json --quiet > srd.txt
    s "$1" synthesize alltoall --network torus:3,3 --bytes 1KiB,1MiB --out sat --quiet > sat.txt
    s "$1" synthesize alltoallv --network hyperx:3 --sizes random:4096:1 --out sav.json --quiet > sav.txt
    s "$1" synthesize allgather --network torus:2,4 --ranks-per-node 2 --bytes 1MiB --out sq.json --quiet > sq.txt
    s "$1" compare allreduce --network torus:4,4 --synthesize --time-limit 5 > cs.txt 2>/dev/null
    cd - > /dev/null
}

outputs "$work/before-src" "$work/before"
outputs "$here" "$work/after"
differ=$(diff -rq "$work/before" "$work/after" || true)
count=$(find "$work/before" -type f | wc -l)
if [ -n "$differ" ]; then echo "$differ"; echo "DIFFERENT: see above ($count files)"; exit 1; fi
echo "SAME: $count files byte-identical (routes, checks, tables, a schedule, reports, bounds)"
