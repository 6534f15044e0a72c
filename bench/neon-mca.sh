#!/bin/sh
# Estimates the generated NEON kernels' speed with llvm-mca (no arm64 machine
# needed) and writes bench/results/neon-mca.md. Needs Go, llvm-mc and
# llvm-mca of LLVM 19 or later (Debian: apt-get install llvm-19); LLVM 14's
# -mcpu=neoverse-* all fall back to a Cortex-A57 model.
#
#   bench/neon-mca.sh           write the table
#   bench/neon-mca.sh -check    also exit 1 when a loop or row is above 1.05x its floor
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
: "${LLVM_MC:=llvm-mc-19}"
: "${LLVM_MCA:=llvm-mca-19}"
for t in go "$LLVM_MC" "$LLVM_MCA"; do
	command -v "$t" >/dev/null || { echo "neon-mca.sh: $t not found (Debian: apt-get install llvm-19)" >&2; exit 2; }
done
cd "$root/bench"
exec go run ./cmd/neonmca -root "$root" -mc "$LLVM_MC" -mca "$LLVM_MCA" -o "$root/bench/results/neon-mca.md" "$@"
