"""Benchmark: how long a signal waits before synth's handler can run, over a whole command.

    python tests/bench/bench_signal_latency.py [--case NAME ...] [--every SECONDS]
    python tests/bench/bench_signal_latency.py --argv 'compare allreduce --network torus:16,16' --json

Python runs a signal's handler in the main thread between two bytecodes, so a signal waits as long
as the main thread is inside one native call that is not run under synth.core.interrupt.native
(issue 22: "every command stops within two seconds of SIGINT or SIGTERM"). Each case runs one synth
command in a child process with a probe: a thread sends SIGUSR1 to the process every `--every`
seconds and a handler notes when it ran; the delay from each send to its handler is the latency a
SIGINT or SIGTERM sent at that moment would have had. The probe prints the largest delays with the
main thread's stack when each started (a stack taken while the handler waits shows the call that
holds it), and the command's own exit. This measures the whole run at every moment, which sending
real signals at a few moments cannot; test_signals.py sends real ones.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

CASES = {
    # MULTITREE's 4096 greedy trees, seven allreduce schedules of up to 10^8 transfers verified and priced
    "compare-allreduce-64x64": ["compare", "allreduce", "--network", "torus:64,64"],
    "schedule-swing-64x64": ["schedule", "allreduce", "--algorithm", "swing-b", "--network", "torus:64,64",
                             "--out", "{tmp}/swing.json"],
    "verify-swing-64x64": ["verify", "{tmp}/swing.json"],
    "schedule-tuna-16384": ["schedule", "alltoallv", "--algorithm", "tuna", "--radix", "128", "--sizes",
                            "random:1024:1", "--network", "torus:64,64:p=4"],
    "route-minimal-dragonfly": ["route", "dragonfly:8,16,8:groups=128", "--traffic", "a2a-lin", "--phase", "0-63",
                                "--router", "minimal", "--quiet"],
}

PROBE = r"""
import os, signal, sys, threading, time, traceback, json
every = float(sys.argv[1]); sys.argv = ["synth"] + sys.argv[2:]
main = threading.main_thread()
pending = {"sent": None}
delays = []  # (delay, stack when it started)
def handler(signum, frame):
    sent = pending["sent"]
    if sent is not None:
        delays.append((time.monotonic() - sent[0], sent[1]))
        pending["sent"] = None
def probe():
    while True:
        time.sleep(every)
        if pending["sent"] is None:
            frame = sys._current_frames().get(main.ident)
            pending["sent"] = (time.monotonic(), "".join(traceback.format_stack(frame)[-5:]) if frame else "")
            os.kill(os.getpid(), signal.SIGUSR1)
signal.signal(signal.SIGUSR1, handler)
def report():
    delays.sort(key=lambda d: -d[0])
    sys.__stderr__.write("PROBE " + json.dumps({"samples": len(delays), "worst": delays[:5]}) + "\n")
import atexit; atexit.register(report)
threading.Thread(target=probe, daemon=True).start()
import runpy
runpy.run_module("synth", run_name="__main__")
"""


def run_case(argv: list[str], every: float) -> tuple[int, dict, float]:
    import time

    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PROBE, str(every), *argv], capture_output=True, text=True)
    elapsed = time.monotonic() - start
    line = next((x for x in done.stderr.splitlines() if x.startswith("PROBE ")), None)
    if line is None:
        raise SystemExit(f"{argv}: no probe report (exit {done.returncode}): {done.stderr[-2000:]}")
    return done.returncode, json.loads(line[len("PROBE "):]), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--every", type=float, default=0.05, help="seconds between probes (default 0.05)")
    parser.add_argument("--argv", help="one synth command line instead of the cases")
    parser.add_argument("--json", action="store_true", help="with --argv: the probe's report as JSON")
    args = parser.parse_args()
    if args.argv:
        code, found, elapsed = run_case(args.argv.split(), args.every)
        if args.json:
            print(json.dumps({"exit": code, "seconds": elapsed, **found}))
        else:
            print(f"exit {code}, {elapsed:.1f} s, {found['samples']} probes, worst wait "
                  f"{found['worst'][0][0] if found['worst'] else 0:.3f} s")
        return
    names = args.case or list(CASES)
    with tempfile.TemporaryDirectory() as tmp:
        if "verify-swing-64x64" in names and "schedule-swing-64x64" not in names:
            names.insert(names.index("verify-swing-64x64"), "schedule-swing-64x64")
        print(f"{'case':28} {'exit':>4} {'run s':>7} {'probes':>7} {'worst wait s':>12}")
        for name in names:
            code, found, elapsed = run_case([a.format(tmp=tmp) for a in CASES[name]], args.every)
            worst = found["worst"]
            print(f"{name:28} {code:>4} {elapsed:>7.1f} {found['samples']:>7} {worst[0][0] if worst else 0:>12.3f}")
            for delay, stack in worst[:2]:
                if delay > 0.5:
                    print(f"    {delay:.2f} s in:\n" + "".join(f"      {x}\n" for x in stack.splitlines()))


if __name__ == "__main__":
    main()
