#!/usr/bin/env bash
# Installs what partbench's tests need on a fresh Debian machine: Open MPI
# (the mpirun tests run the real launcher), gcc (race detector, fake shared
# libraries), pdflatex with booktabs and siunitx (the LaTeX compile tests)
# and, without any system install, Debian's NVRTC for the kernel
# compile gate (make kernel-check). Does nothing when all are already there.
#
# NVRTC: Debian's non-free archive carries it (trixie: libnvrtc12 12.4 with
# libnvrtc-builtins12.4, which runs on bookworm's libc; bookworm:
# libnvrtc11.2 with libnvrtc-builtins11.8). The packages are fetched with
# `apt-get download` through a private apt configuration (its own sources
# list, state and cache folders under the cache, no root needed) whose
# mirror is the one this machine's own Debian source list names, with the
# non-free component added; they are unpacked with `dpkg -x` and their
# libraries kept in
#     ${PARTBENCH_CACHE:-$HOME/.cache/partbench}/nvrtc/lib
# where partbench's NVRTC loader looks (cgo/dl). A second run with the
# libraries there returns at once. PARTBENCH_NVRTC_SUITES overrides the
# suites tried (default "trixie <this machine's codename>").
# PARTBENCH_REQUIRE_NVRTC=1 turns a failed NVRTC fetch into a failure
# (otherwise a warning: the compile gate then reports NVRTC missing).
set -euo pipefail

need=()
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v g++ >/dev/null 2>&1 || need+=(g++)
# OpenBLAS: the CPU backend's GEMM when present (exec/cpu, loaded at run time).
ldconfig -p 2>/dev/null | grep -q libopenblas.so.0 || need+=(libopenblas0-pthread)
# pdflatex with booktabs and siunitx: the LaTeX partbench writes is compiled
# in a two-column article by the tests (report/latextest), overfull boxes refused.
if ! command -v pdflatex >/dev/null 2>&1 || ! kpsewhich siunitx.sty >/dev/null 2>&1 || ! kpsewhich booktabs.sty >/dev/null 2>&1; then
	need+=(texlive-latex-base texlive-latex-recommended texlive-science)
fi
if [ ${#need[@]} -gt 0 ]; then
	echo "install-test-deps: installing ${need[*]}"
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || { echo "install-test-deps: need root or sudo to install ${need[*]}" >&2; exit 1; }
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# ---- NVRTC into the cache ----

cache=${PARTBENCH_CACHE:-$HOME/.cache/partbench}
dest=$cache/nvrtc

nvrtc_fail() {
	if [ "${PARTBENCH_REQUIRE_NVRTC:-}" = 1 ]; then
		echo "install-test-deps: $*" >&2
		exit 1
	fi
	echo "install-test-deps: warning: $* (make kernel-check will report NVRTC missing)" >&2
	exit 0
}

have_nvrtc() {
	local so
	for so in libnvrtc.so.12 libnvrtc.so.11.2; do
		[ -e "$dest/lib/$so" ] && ls "$dest/lib"/libnvrtc-builtins.so.* >/dev/null 2>&1 && return 0
	done
	return 1
}
if have_nvrtc; then
	exit 0
fi
# One fetch at a time per cache (parallel jobs on one machine): the others
# wait, then find the libraries there.
mkdir -p "$cache"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$cache/.nvrtc.lock"
	flock 9
	have_nvrtc && exit 0
fi
command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 ||
	nvrtc_fail "no apt-get/dpkg on this machine: cannot fetch Debian's NVRTC; set PARTBENCH_NVRTC_LIB to a libnvrtc instead"

codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || nvrtc_fail "/etc/os-release names no VERSION_CODENAME: not a Debian machine?"

# mirrors prints "URI KEYRING" for every source of this machine whose suite
# is the release itself (codename: not -security or -updates), from the
# one-line .list files and the deb822 .sources files alike.
mirrors() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v cn="$codename" '
			$1 == "deb" {
				key = ""; i = 2
				if ($2 ~ /^\[/) {
					for (; i <= NF; i++) {
						if (match($i, /signed-by=[^] ]+/)) key = substr($i, RSTART + 10, RLENGTH - 10)
						if ($i ~ /\]$/) { i++; break }
					}
				}
				if ($(i + 1) == cn) print $i, (key == "" ? "-" : key)
			}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v cn="$codename" '
			function flush() {
				if (enabled && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " cn " "))
					for (u = 1; u <= nu; u++) print uris[u], (key == "" ? "-" : key)
				types = ""; suites = ""; key = ""; nu = 0; enabled = 1
			}
			BEGIN { enabled = 1 }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
			/^URIs:/ { sub(/^URIs:[ \t]*/, ""); nu = split($0, uris, /[ \t]+/) }
			/^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
			/^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); key = $0 }
			/^Enabled:[ \t]*no/ { enabled = 0 }
			END { flush() }' "$f"
	done
}

mapfile -t srcs < <(mirrors | awk '!seen[$1]++')
[ ${#srcs[@]} -gt 0 ] || nvrtc_fail "no source in /etc/apt/sources.list(.d) serves suite $codename"

work=$dest.tmp.$$
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/etc" "$work/state/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/root"
suites=${PARTBENCH_NVRTC_SUITES:-trixie $codename}
: >"$work/etc/sources.list"
for s in "${srcs[@]}"; do
	uri=${s%% *} key=${s#* }
	opt=""
	[ "$key" != "-" ] && opt="[signed-by=$key] "
	for suite in $suites; do
		echo "deb ${opt}$uri $suite non-free" >>"$work/etc/sources.list"
	done
done
apt=(-o "Dir::Etc::SourceList=$work/etc/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State=$work/state" -o "Dir::State::status=/var/lib/dpkg/status"
	-o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)"
	-o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
	-o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
	-o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
	-o "Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false")
echo "install-test-deps: looking for NVRTC in the non-free component of: $suites"
apt-get "${apt[@]}" -qq update >"$work/update.log" 2>&1 || nvrtc_fail "private apt-get update failed: $(tail -n 3 "$work/update.log")"

# candidate PACKAGE prints the version apt would fetch ("" when none).
candidate() { apt-cache "${apt[@]}" policy "$1" 2>/dev/null | awk '/Candidate:/ { if ($2 != "(none)") print $2 }'; }
pkgs=()
for pair in "libnvrtc12 libnvrtc-builtins12.4" "libnvrtc11.2 libnvrtc-builtins11.8"; do
	set -- $pair
	if [ -n "$(candidate "$1")" ] && [ -n "$(candidate "$2")" ]; then
		pkgs=("$1" "$2")
		break
	fi
done
[ ${#pkgs[@]} -gt 0 ] || nvrtc_fail "neither libnvrtc12 + libnvrtc-builtins12.4 nor libnvrtc11.2 + libnvrtc-builtins11.8 in the non-free component of $suites"
(cd "$work/debs" && apt-get "${apt[@]}" -qq download "${pkgs[@]}") >"$work/download.log" 2>&1 ||
	nvrtc_fail "apt-get download ${pkgs[*]} failed: $(tail -n 3 "$work/download.log")"
for deb in "$work"/debs/*.deb; do
	dpkg -x "$deb" "$work/root"
done
mkdir -p "$work/lib"
# The libraries (and their soname links) from the multiarch folder, flat.
find "$work/root" -name 'libnvrtc*.so*' \( -type f -o -type l \) -exec cp -P {} "$work/lib/" \;
{
	for p in "${pkgs[@]}"; do echo "$p $(candidate "$p")"; done
} >"$work/lib/PACKAGES"
rm -rf "$dest.old"
[ -d "$dest" ] && mv "$dest" "$dest.old"
mkdir -p "$dest"
mv "$work/lib" "$dest/lib"
rm -rf "$dest.old"
echo "install-test-deps: NVRTC in $dest/lib:"
sed 's/^/  /' "$dest/lib/PACKAGES"
