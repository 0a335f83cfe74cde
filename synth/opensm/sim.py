"""A simulated InfiniBand fabric (ibsim) and OpenSM runs against it, without any IB hardware.

Recipe and pitfalls: docs/opensm-notes.md. Every client (opensm, dump_fts) runs with the
umad2sim preload, the simulator's private socket name, a writable working directory (umad2sim
writes ./sys-<pid>/ there) and under `timeout -s KILL` (a client whose simulator is gone blocks
forever). One fresh simulator per OpenSM run: ibsim has 10 client slots and a killed client
never frees its own.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from synth.core.errors import SynthError
from synth.core.interrupt import child_processes, kill_processes
from synth.core.validate import show

PRELOAD_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib/umad2sim/libumad2sim.so",
)
PACKAGES = "apt-get install opensm ibsim-utils infiniband-diags"
READY_TIMEOUT = 30.0
CLIENT_TIMEOUT = 600  # seconds a single opensm or dump_fts run may take


@dataclass(frozen=True)
class Tools:
    ibsim: str
    opensm: str
    dump_fts: str
    preload: str


def find_tools() -> Tools:
    """The binaries and the umad2sim preload library, or one clear error naming the packages."""
    found = {name: shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") for name in ("ibsim", "opensm", "dump_fts")}
    preload = next((p for p in PRELOAD_CANDIDATES if os.path.exists(p)), None)
    missing = [name for name, path in found.items() if not path] + ([] if preload else ["libumad2sim.so"])
    if missing:
        raise SynthError(f"{', '.join(missing)} not found: install the Debian packages with `{PACKAGES}`")
    return Tools(found["ibsim"], found["opensm"], found["dump_fts"], preload)


def _capacity_options(fabric_text: str) -> list[str]:
    """ibsim limits sized to the fabric (its defaults stop at 256 switches), and -L 49152: the
    default table size (30720) is below the unicast LID range and silently corrupts tables."""
    switches = fabric_text.count("\nSwitch")
    nodes = switches + fabric_text.count("\nCa")
    ports = sum(1 for line in fabric_text.splitlines() if line.startswith("["))
    return ["-L", "49152", "-S", str(max(256, 2 * switches)), "-N", str(max(2048, 2 * nodes)), "-P", str(max(13312, 2 * ports + 2 * nodes))]


class Simulator:
    """`with Simulator(tools, fabric_file) as sim:` starts ibsim on the fabric and stops it (by
    pid) on leaving, also on errors; `sim.run(...)` runs one client against it."""

    def __init__(self, tools: Tools, fabric: Path):
        self.tools, self.fabric = tools, Path(fabric)
        self.dir = Path(tempfile.mkdtemp(prefix="synth-ibsim-"))
        self.socket = f"synth{os.getpid()}-{self.dir.name[-8:]}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "Simulator":
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        fabric_text = self.fabric.read_text()
        log = open(self.dir / "ibsim.log", "w")
        with log:
            self.process = subprocess.Popen(
                [self.tools.ibsim, "-s", "-n", *_capacity_options(fabric_text), str(self.fabric.resolve())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, env=self._env(preload=False))
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._listening():
            if self.process.poll() is not None:
                raise SynthError(f"ibsim refused the fabric {self.fabric}: {self._log_tail()}")
            if time.monotonic() > deadline:
                raise SynthError(f"ibsim did not start within {READY_TIMEOUT:.0f} s: {self._log_tail()}")
            time.sleep(0.02)

    def _listening(self) -> bool:
        # ibsim is ready when its abstract control socket is bound ("Network simulator ready"
        # is printed before that).
        try:
            with open("/proc/net/unix") as table:
                return f"@{self.socket}:ctl" in table.read()
        except OSError:
            return subprocess.run(["ss", "-x", "-a"], capture_output=True, text=True).stdout.find(f"@{self.socket}:ctl") >= 0

    def _log_tail(self) -> str:
        lines = [l for l in (self.dir / "ibsim.log").read_text(errors="replace").splitlines() if "ibwarn" not in l]
        return " | ".join(lines[-3:]) or "(no output)"

    def _env(self, preload: bool = True) -> dict:
        env = dict(os.environ, IBSIM_SOCKNAME=self.socket)
        if preload:
            env["LD_PRELOAD"] = self.tools.preload
        return env

    def run(self, argv: list[str], extra_env: dict | None = None) -> subprocess.CompletedProcess:
        """One client against the simulator, killed after CLIENT_TIMEOUT seconds."""
        if self.process is None or self.process.poll() is not None:
            raise SynthError(f"ibsim is not running: {self._log_tail()}")
        try:
            client = subprocess.Popen(["timeout", "-s", "KILL", str(CLIENT_TIMEOUT), *argv], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, cwd=self.dir,
                                      env={**self._env(), **(extra_env or {})})
        except OSError as exc:
            raise SynthError(f"cannot run {argv[0]}: {exc.strerror}") from None
        with client:
            try:
                out, err = client.communicate()
            except BaseException:  # interrupted: the client goes too, not left to run as an orphan
                _kill_group(client)
                raise
        return subprocess.CompletedProcess(client.args, client.returncode, out, err)

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _kill_group(client: subprocess.Popen) -> None:
    """Stop `timeout` and the client it runs (OpenSM), which SIGKILL to `timeout` alone left
    running: the client first, so that `timeout` reaps it and ends; then, should anything be left,
    the process group that `timeout` leads (it times out the whole group)."""
    kill_processes(child_processes(client.pid))
    try:
        client.wait(timeout=1)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(client.pid, signal.SIGKILL)
        except OSError:
            client.kill()
        client.wait()


@dataclass
class OpenSmRun:
    engine: str  # the engine that configured the switches (another one means a fallback)
    log: str
    guid2lid: str  # OpenSM's LID database after the run
    seconds: float


def run_opensm(sim: Simulator, engine: str, lmc: int, guid2lid: str | None = None, lfts: Path | None = None,
               qos: tuple[Path, Path] | None = None) -> OpenSmRun:
    """OpenSM once (`-o`) with the given routing engine; our LIDs when `guid2lid` is given; with
    `qos` (options file, policy file) QoS enabled by them (synth.io.qos_policy)."""
    cache = sim.dir / f"cache-{engine}"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    if guid2lid is not None:
        (cache / "guid2lid").write_text(guid2lid)
    log = cache / "opensm.log"
    options = ["-F", str(Path(qos[0]).resolve()), "-Q", "-Y", str(Path(qos[1]).resolve())] if qos else ["-F", "/dev/null"]
    argv = [sim.tools.opensm, *options, "-o", "-s", "0", "-e", "-f", str(log), "-D", "0x03",
            "--dump_files_dir", str(cache), "-R", engine, "-l", str(lmc)]
    if lfts is not None:
        argv += ["-U", str(Path(lfts).resolve())]
    started = time.perf_counter()
    done = sim.run(argv, {"OSM_CACHE_DIR": str(cache), "OSM_TMP_DIR": str(cache)})
    seconds = time.perf_counter() - started
    text = log.read_text(errors="replace") if log.exists() else ""
    if done.returncode != 0 or "SUBNET UP" not in text:
        reason = "timed out" if done.returncode in (124, 137, -9) else f"exit code {done.returncode}"
        raise SynthError(f"opensm -R {engine} did not bring the subnet up ({reason}): {_last_error(text, done.stderr)}")
    configured = re.findall(r"osm_ucast_mgr_process: (\S+) tables configured on all switches", text)
    lids = (cache / "guid2lid").read_text() if (cache / "guid2lid").exists() else ""
    return OpenSmRun(configured[-1] if configured else "unknown", text, lids, seconds)


def _last_error(log: str, stderr: str) -> str:
    errors = [l.strip() for l in log.splitlines() if "ERR" in l] or [l.strip() for l in stderr.splitlines() if l.strip() and "ibwarn" not in l]
    return errors[-1] if errors else "no error message"


def _smpquery(sim: Simulator, *query: str):
    """`smpquery QUERY...` on the simulated fabric (its output), one line naming what failed."""
    smpquery = shutil.which("smpquery") or shutil.which("smpquery", path="/usr/sbin:/sbin")
    if smpquery is None:
        raise SynthError(f"smpquery not found: install the Debian packages with `{PACKAGES}`")
    done = sim.run([smpquery, *query])
    if done.returncode != 0:
        raise SynthError(f"smpquery {' '.join(query)} failed (exit code {done.returncode}): {_last_error('', done.stderr)}")
    return done


def read_sl2vl(sim: Simulator, lid: int, out_port: int) -> list[list[int]]:
    """A switch's SL-to-VL table for one output port, every input port's row (`smpquery sl2vl`)."""
    done = _smpquery(sim, "sl2vl", str(lid), str(out_port))
    rows = [line.rsplit(":", 1)[1] for line in done.stdout.splitlines() if line.startswith("ports: in")]
    return [[int(v) for v in row.strip().strip("|").split("|")] for row in rows]


VL_RANGE = re.compile(r"^VL0(?:-(\d+))?$")


def read_port_vls(sim: Simulator, lid: int, port: int) -> tuple[int, int]:
    """(data VLs the port can run, data VLs it runs): its PortInfo VLCap and OperVLs (`smpquery
    portinfo`), as counts (VL0-7 is 8)."""
    done = _smpquery(sim, "portinfo", str(lid), str(port))
    fields = {k.strip(): v.strip(". ") for k, _, v in (line.partition(":") for line in done.stdout.splitlines())}
    counts = []
    for name in ("VLCap", "OperVLs"):
        match = VL_RANGE.match(fields.get(name, ""))
        if match is None:
            raise SynthError(f"smpquery portinfo {lid} {port}: no {name} range in its answer ({fields.get(name, 'missing')!r})")
        counts.append(int(match.group(1) or 0) + 1)
    return counts[0], counts[1]


def read_back_tables(sim: Simulator) -> dict[int, dict[int, int]]:
    """Every switch's LFT as the simulated switches hold it: {switch GUID: {LID: port}}, read by
    directed route with `dump_fts -a` (plain dump_fts hides ports >= 128); port 255 (no route)
    is left out."""
    done = sim.run([sim.tools.dump_fts, "-a"])
    if done.returncode != 0:
        raise SynthError(f"dump_fts failed (exit code {done.returncode}): {_last_error('', done.stderr)}")
    return parse_lft_text(done.stdout)


def parse_lft_text(text: str) -> dict[int, dict[int, int]]:
    """LFT text as written by dump_fts, ibroute or OpenSM (`Unicast lids ... guid 0x...` headers,
    `0xLID PORT` entries)."""
    tables: dict[int, dict[int, int]] = {}
    current: dict[int, int] | None = None
    header = re.compile(r" guid 0x([0-9a-fA-F]+)")
    entry = re.compile(r"^0x([0-9a-fA-F]+)\s+(\d+)")
    for line in text.splitlines():
        if line.startswith("Unicast lids"):
            match = header.search(line)
            current = tables.setdefault(int(match.group(1), 16), {}) if match else None
            continue
        match = entry.match(line)
        if match and current is not None:
            port = int(match.group(2))
            if port != 255:
                current[int(match.group(1), 16)] = port
    return tables


def parse_guid2lid(text: str, source: str = "guid2lid") -> dict[int, tuple[int, int]]:
    """OpenSM's LID cache (`guid2lid`): {port GUID: (base LID, top LID)}; a malformed line is an error."""
    lids = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        try:
            guid, base, top = (int(v, 16) for v in parts)
        except ValueError:
            raise SynthError(f"{source}: expected lines 'GUID BASE-LID TOP-LID', got {show(line)}") from None
        lids[guid] = (base, top)
    return lids
