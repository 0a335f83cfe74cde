#!/usr/bin/env bash
# Debian packages synth's backends and checks run, installed when missing:
#   glpsol (glpk-utils), the GLPK backend and the MathProg model's runner.
set -euo pipefail
missing=()
command -v glpsol >/dev/null 2>&1 || missing+=(glpk-utils)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "synth needs the Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
