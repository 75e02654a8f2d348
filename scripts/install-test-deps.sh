#!/usr/bin/env bash
# Installs what partbench's tests need on a fresh Debian machine: Open MPI
# (the mpirun tests run the real launcher) and gcc (race detector, fake
# shared libraries). Does nothing when they are already there.
set -euo pipefail
need=()
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
[ ${#need[@]} -eq 0 ] && exit 0
echo "install-test-deps: installing ${need[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "install-test-deps: need root or sudo to install ${need[*]}" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
