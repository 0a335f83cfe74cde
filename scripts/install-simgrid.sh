#!/usr/bin/env bash
# SimGrid 4.1 for `synth simulate`, built from PyPI's source distribution into this Python (docs/simulation.md).
#
# Why 4.1 and not only Debian's python3-simgrid 3.32 (which install-system-packages.sh installs as the fallback):
# 3.32's kernel scans a std::list of an actor's activities each time a communication ends, so a step with
# thousands of transfers alive is quadratic. The 64 x 64 torus's Swing-B allreduce (16,384 transfers a step) takes
# 52-64 s to replay with 3.32 and about 8 s with 4.1, with identical times (tests/bench/RESULTS.md).
#
# How:
# - PyPI has only a source distribution: cmake, Boost's headers and a C++ compiler build it, about 6 minutes on
#   2 cores; pip keeps the wheel in its cache, so a second set-up takes seconds.
# - pybind11 < 3: 4.1's bindings do not compile with pybind11 3.x, and pip's build isolation would fetch 3.x
#   whatever a constraint file says, so the build runs without isolation against the pybind11 installed here first.
# - Without SMPI (PyPI's default): SMPI brings SimGrid's IB model, which is wrong in 4.1; synth runs IB on Debian's
#   3.32 (synth/simulation/simgrid_module.py, IB_BROKEN).
#
# A build that fails is not fatal: synth then runs on Debian's 3.32 (same results, slower at scale), and this
# script says so on stderr.
set -uo pipefail
PYTHON=${PYTHON:-python3}
PIP=(env PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip)
VERSION=4.1

# Whether this Python imports simgrid $VERSION (its library loaded first, as synth does).
ready() {
    "$PYTHON" - "$VERSION" >/dev/null 2>&1 <<'PY'
import ctypes, importlib.metadata, importlib.util, pathlib, sys
if importlib.metadata.version("simgrid") != sys.argv[1]:
    sys.exit(1)
for library in pathlib.Path(importlib.util.find_spec("simgrid").origin).parent.glob("libsimgrid.so.*"):
    ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
import simgrid
PY
}

ready && exit 0

fallback="synth: SimGrid $VERSION is not installed; synth simulate uses Debian's python3-simgrid (3.32) instead where it loads (Python 3.11)"
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
[ -e /usr/include/boost/version.hpp ] || missing+=(libboost-dev)
# the bindings compile against this Python's headers (Debian's python3 has them in python3-dev)
"$PYTHON" -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
    || missing+=(python3-dev)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "synth: building SimGrid $VERSION needs ${missing[*]} (run as root, or apt-get install them)" >&2
        echo "$fallback" >&2
        exit 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; } \
        || echo "synth: could not apt-get install ${missing[*]}" >&2
fi
echo "synth: installing SimGrid $VERSION for $PYTHON (built from source the first time: about 6 minutes)" >&2
if "${PIP[@]}" install -q "pybind11>=2.4,<3" setuptools wheel \
    && "${PIP[@]}" install -q --no-deps --no-build-isolation "simgrid==$VERSION" && ready; then
    exit 0
fi
echo "$fallback" >&2
exit 0
