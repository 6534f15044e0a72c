#!/usr/bin/env bash
# Runs every test of normgen on a fresh Debian machine of the project's kind
# (x86-64 with AVX2+FMA): installs what is missing, then
#   1. checks that go.mod and go.sum are tidy, builds, vets (amd64 and
#      arm64) and format-checks the repository,
#   2. runs normgen's own tests (spec, IR, lowerings with their encoding and
#      execution tests, end-to-end go generate and a consumer module, the
#      spec's JSON Schema under a validator),
#   3. checks that out/ is exactly what the generator writes today,
#   4. runs the generated tests of every package in out/ natively, with the
#      purego tag, and with AVX2 (and AVX-512) switched off by GODEBUG,
#   5. runs them for arm64 NEON under qemu-user,
#   6. runs ONNX's own node tests (libonnx-testdata) through generated kernels,
#   7. runs them for AVX-512 under the Bochs emulator (natively where the
#      CPU has AVX-512), in the background from the start of step 2.
# Each stage prints its wall time; any failure stops the run non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
export NORMGEN_CI=1 # tests that need an outside tool fail instead of skipping

stage() { echo; echo "=== $* ($(date +%T))"; }
elapsed() { echo "--- $1 took $(( $(date +%s) - $2 )) s"; }

need_apt=()
command -v qemu-aarch64-static >/dev/null || need_apt+=(qemu-user-static)
command -v aarch64-linux-gnu-as >/dev/null || need_apt+=(binutils-aarch64-linux-gnu)
if [ ${#need_apt[@]} -gt 0 ]; then
	stage "installing ${need_apt[*]}"
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

t=$(date +%s); stage "build, vet, gofmt, go.mod tidy"
go mod tidy -diff
go build ./...
GOARCH=amd64 go vet ./...
GOARCH=arm64 go vet ./...
# The generated packages on an architecture without assembly (pure Go).
GOARCH=386 go vet ./out/...
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
elapsed "build, vet, gofmt" "$t"

# The AVX-512 stage starts here and runs beside the stages below: under
# Bochs (a CPU without AVX-512) it keeps one core busy for minutes, while
# the other stages keep two cores only about 80% busy (31.8 of 39.5 core
# minutes in a clean run). Its log is printed, and its status checked, at
# the end.
t512=$(date +%s); stage "generated tests: AVX-512 (Bochs unless the CPU has it): started in the background"
bindir=$(mktemp -d)
avx512_pid=
cleanup() {
	if [ -n "$avx512_pid" ]; then kill -- -"$avx512_pid" 2>/dev/null || true; fi
	rm -rf "$bindir"
}
trap cleanup EXIT
for pkg in $(go list ./out/...); do
	CGO_ENABLED=0 go test -c -o "$bindir/$(basename "$pkg").test" "$pkg"
done
# Under Bochs every instruction costs some 70 host instructions: the
# binaries check only the AVX-512 functions and the entry points (the other
# implementations run natively below), on fewer inputs (-short under
# Bochs), and skip the long sets, the goroutine stress tests and the tests
# of the Go code around the assembly (lengths, overlaps, the float64 path
# of non-finite rows). All of them run natively below, and with AVX-512
# where the CPU has it. NORMGEN_FORCE_BOCHS=1 emulates even on a CPU with
# AVX-512 (to time the command as a CPU without it would run it). The
# timeout allows for the stages sharing the cores; setsid makes the run a
# process group that cleanup can stop whole.
avx512_flags=(--timeout 2400)
[ "${NORMGEN_FORCE_BOCHS:-0}" != 1 ] || avx512_flags+=(--force-bochs)
setsid scripts/avx512-bochs.sh "${avx512_flags[@]}" --env NORMGEN_ONLY_ISA=avx512 \
	$(for pkg in $(go list ./out/...); do echo "$bindir/$(basename "$pkg").test@out/$(basename "$pkg")"; done) \
	-- -test.short -test.skip 'LongRows|LongSets|Concurrent|NonFinite|WrongLengths|Overlap|TensorParallel' \
	>"$bindir/avx512.log" 2>&1 &
avx512_pid=$!

t=$(date +%s); stage "normgen's own tests"
# go test starts the packages in the order given: the longest first (each
# several minutes, most of it in go commands of their own), so that the
# short ones fill the other core beside them instead of one long package
# running alone at the end.
longest=(tests/variants gen/lower/amd64 gen/lower/arm64 cmd/normgen tests/e2e)
mod=$(go list -m)
go test -count=1 -timeout 30m "${longest[@]/#/./}" \
	$(go list ./... | grep -v '/out/' | grep -vxF -f <(printf '%s\n' "${longest[@]/#/$mod/}"))
# The spec schema against a JSON Schema validator, in a module of its own.
(cd tests/schema && go mod tidy -diff && go vet ./... && go test -count=1 ./...)
elapsed "normgen's own tests" "$t"

t=$(date +%s); stage "out/ is what the generator writes"
go run ./cmd/normgen check
elapsed "out/ check" "$t"

t=$(date +%s); stage "generated tests: native, purego, GODEBUG fallbacks"
# The long-set tests run once per implementation: LongRows checks every
# implementation the CPU runs in the native run; LongSets the dispatched one.
go test -count=1 ./out/...
# The purego build's long sets and long reductions are the pure-Go
# functions the purego fallback below runs (the same code, reached through
# the entry points): they run there.
go test -count=1 -tags purego -skip 'LongRows|LongSets|LongReductions' ./out/...
# The fallbacks: the native run checked every implementation the CPU runs,
# by name, on every input; these check that dispatch falls back, through
# the entry points: -short keeps every entry point and fixed size, on
# fewer families and row counts. The long sets, which check the
# dispatched implementation alone, run at full length (the same binary).
for fallback in "cpu.avx512f=off avx2" "cpu.avx512f=off,cpu.avx2=off,cpu.fma=off purego"; do
	read -r godebug isa <<<"$fallback"
	GODEBUG=$godebug NORMGEN_ONLY_ISA=$isa go test -count=1 -short -skip 'LongRows|LongSets|LongReductions' ./out/...
	GODEBUG=$godebug NORMGEN_ONLY_ISA=$isa go test -count=1 -run 'LongSets|LongReductions' ./out/...
done
go test -count=1 -race -run 'Concurrent|Parallel|WrongLengths|Overlap' ./out/...
# tests/audit ran natively with normgen's own tests; the pure-Go forms
# too, and built with GOAMD64=v3, where Go fuses multiply-adds.
go test -count=1 -tags purego ./tests/audit/
GOAMD64=v3 go test -count=1 -short -tags purego ./tests/audit/
elapsed "generated tests (amd64)" "$t"

t=$(date +%s); stage "generated tests: arm64 NEON under qemu-user"
# The long-set tests check the assembly here: the same Go code's long sets
# ran natively above (a kernel without NEON runs pure Go under the
# emulator).
# NORMGEN_ONLY_ISA=neon: pure Go has its own run below.
GOARCH=arm64 NORMGEN_ONLY_ISA=neon NORMGEN_LONG_ASM_ONLY=1 go test -count=1 -exec qemu-aarch64-static ./out/...
# The pure-Go kernels are the Go code checked natively above, compiled for
# arm64 (where Go fuses multiply-adds the float32 forms do not round first):
# -short checks that build on fewer inputs,
# and the long sets, which would add minutes for little, are left out.
GOARCH=arm64 go test -count=1 -short -tags purego -exec qemu-aarch64-static -skip 'LongRows|LongSets' ./out/...
GOARCH=arm64 go test -count=1 -short -tags purego -exec qemu-aarch64-static ./tests/audit/
elapsed "generated tests (arm64)" "$t"

t=$(date +%s); stage "ONNX node tests through generated kernels"
scripts/test-onnx.sh
elapsed "ONNX conformance" "$t"

stage "generated tests: AVX-512 (Bochs unless the CPU has it): waiting for the background run"
avx512_status=0
wait "$avx512_pid" || avx512_status=$?
avx512_pid=
cat "$bindir/avx512.log"
[ "$avx512_status" = 0 ] || { echo "the AVX-512 stage failed (status $avx512_status)"; exit 1; }
# Its own length (its log's last write), which the wait above hides when it
# ended before the stages beside it.
echo "--- generated tests (AVX-512) ran $(( $(stat -c %Y "$bindir/avx512.log") - t512 )) s"
elapsed "generated tests (AVX-512, from its start until waited for)" "$t512"

echo; echo "=== all tests passed"
