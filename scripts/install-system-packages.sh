#!/usr/bin/env bash
# Debian packages synth's backends and checks run, installed when missing:
#   glpsol (glpk-utils): the GLPK backend, the MathProg model's runner;
#   opensm, ibsim (ibsim-utils, with the umad2sim preload library libumad2sim0) and dump_fts
#   (infiniband-diags): `synth opensm-check`, which loads tables into OpenSM on a simulated fabric;
#   chromium: the tests lay out `synth report`'s HTML page in headless Chromium (tests/integration/test_report_browser.py);
#   python3-simgrid: SimGrid 3.32's Python module, built for Debian's Python 3.11 and loaded from its file by synth
#   in any Python 3.11 (synth/simulation/simgrid_module.py): `synth simulate`'s fallback when PyPI's SimGrid 4.1
#   (scripts/install-simgrid.sh, preferred) is not there, and the second version the tests compare it with;
#   openmpi-bin, libopenmpi-dev: Open MPI 4.1 (mpirun, libmpi) for `synth run` and `synth tune` (mpi4py, from
#   PyPI, loads Debian's libmpi at run time).
set -euo pipefail
missing=()
command -v glpsol >/dev/null 2>&1 || missing+=(glpk-utils)
command -v opensm >/dev/null 2>&1 || [ -x /usr/sbin/opensm ] || missing+=(opensm)
command -v ibsim >/dev/null 2>&1 || missing+=(ibsim-utils)
ls /usr/lib/*/umad2sim/libumad2sim.so >/dev/null 2>&1 || missing+=(libumad2sim0)
command -v dump_fts >/dev/null 2>&1 || [ -x /usr/sbin/dump_fts ] || missing+=(infiniband-diags)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/python3/dist-packages/simgrid.cpython-*.so >/dev/null 2>&1 || missing+=(python3-simgrid)
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
ls /usr/lib/*/openmpi/include/mpi.h /usr/lib/*/openmpi/lib/libmpi.so >/dev/null 2>&1 || missing+=(libopenmpi-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "synth needs the Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
