#!/usr/bin/env bash
# scripts/bench.sh [normbench flags]: the one command for normgen's benchmark.
#
# Generates normgen's kernels once per instruction set (bench/specs/*.yaml
# into bench/gen/, never edited by hand), installs what the peers need
# (Debian's libdnnl-dev for oneDNN, when missing and apt-get is available),
# builds bench/cmd/normbench with every peer this machine supports, and runs
# it single-threaded, then normgen's Parallel entry points on 2 threads
# against a 2-thread copy (-threads). Results: bench/results/<machine>.md and .svg.
#
#   scripts/bench.sh            full run (about 5 minutes on 2 cores)
#   scripts/bench.sh -quick     about a minute, noisier
#   scripts/bench.sh -h 4096 -ops RMSNorm -out ''    one size, table on stdout
#
# Environment: NORMGEN=path uses that normgen binary instead of building
# cmd/normgen; NO_INSTALL=1 never runs apt-get; NO_ONEDNN=1, NO_SIMD=1 leave
# those peers out.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root/bench"
log() { printf 'bench.sh: %s\n' "$*" >&2; }

tags=()
notes=()

# --- oneDNN (cgo) -----------------------------------------------------------
have_dnnl() { [ -e /usr/include/oneapi/dnnl/dnnl.h ] && { [ -e /usr/lib/x86_64-linux-gnu/libdnnl.so ] || ldconfig -p 2>/dev/null | grep -q 'libdnnl\.so '; }; }
if [ -z "${NO_ONEDNN:-}" ]; then
	if ! have_dnnl && [ -z "${NO_INSTALL:-}" ] && command -v apt-get >/dev/null; then
		sudo=""
		[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
		log "installing libdnnl-dev (oneDNN) with apt-get"
		if ! { $sudo apt-get install -y -q libdnnl-dev >/dev/null 2>&1 ||
			{ $sudo apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q libdnnl-dev >/dev/null 2>&1; }; }; then
			log "could not install libdnnl-dev: the oneDNN peer is left out"
		fi
	fi
	if have_dnnl && [ "$(go env CGO_ENABLED)" = 1 ]; then
		tags+=(onednn)
	else
		notes+=("onednn: left out (libdnnl-dev or cgo unavailable)")
	fi
fi

# --- Go's experimental SIMD (archsimd peer) ------------------------------------
goexp="${GOEXPERIMENT:-}"
if [ -z "${NO_SIMD:-}" ] && [ "$(go env GOARCH)" = amd64 ]; then
	if GOEXPERIMENT=simd go list simd/archsimd >/dev/null 2>&1; then
		goexp="${goexp:+$goexp,}simd"
	else
		notes+=("archsimd: left out ($(go version | cut -d' ' -f3) has no simd/archsimd)")
	fi
fi

# --- normgen's kernels, one package per instruction set ----------------------
normgen="${NORMGEN:-}"
if [ -z "$normgen" ]; then
	if [ -d "$root/cmd/normgen" ]; then
		normgen="$root/bench/gen/.normgen"
		mkdir -p "$root/bench/gen"
		(cd "$root" && go build -o "$normgen" ./cmd/normgen) || { log "building cmd/normgen failed"; normgen=""; }
	else
		log "cmd/normgen does not exist yet: normgen's kernels are left out"
	fi
fi
version=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
isas=(purego)
case "$(go env GOARCH)" in
amd64) isas=(avx512 avx2 purego) ;;
arm64) isas=(neon purego) ;;
esac
if [ -n "$normgen" ]; then
	for isa in "${isas[@]}"; do
		spec="specs/$isa.yaml"
		out="gen/nb$isa"
		if err=$("$normgen" -spec "$spec" -out "$out" 2>&1 >/dev/null); then
			tags+=("normgen_$isa")
		else
			first=$(printf '%s\n' "$err" | grep -v '^[[:space:]]*$' | head -n1 || true)
			first=${first:-"exited with an error and no message"}
			log "normgen -spec $spec failed: $first"
			notes+=("normgen-$isa: not generated: ${first:0:160}")
		fi
	done
	notes+=("normgen: checkout $version")
fi

# --- build and run -----------------------------------------------------------
tagstr=$(IFS=,; echo "${tags[*]:-}")
log "building normbench (tags: ${tagstr:-none}; GOEXPERIMENT=${goexp:-none})"
GOEXPERIMENT="$goexp" go build -tags "$tagstr" -o normbench ./cmd/normbench
args=()
for n in "${notes[@]}"; do args+=(-note "$n"); done
# One thread for OpenMP (oneDNN) too; normbench itself sets GOMAXPROCS(1).
exec env OMP_NUM_THREADS=1 ./normbench "${args[@]}" "$@"
