#!/usr/bin/env bash
# Runs the ONNX project's node tests of LayerNormalization,
# InstanceNormalization and BatchNormalization (Debian's libonnx-testdata)
# through normgen-generated kernels: tests/onnx, a module of its own so that
# its protobuf dependency never reaches normgen's users.
#   1. installs libonnx-testdata when missing,
#   2. generates tests/onnx/onnxnorm from tests/onnx/onnx.yaml with this
#      checkout's normgen (go generate; the package is git-ignored),
#   3. vets the module for amd64 and arm64,
#   4. runs every case (the table of max errors is printed), natively, with
#      AVX-512 off, with AVX2 off too, with the purego tag, and for arm64
#      under qemu-user when qemu-aarch64-static is installed; and the
#      module's other tests (the protobuf reader, the generated package's own
#      tests).
# Any failure stops the run non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
export NORMGEN_CI=1 # a missing data set fails instead of skipping

if ! dpkg -s libonnx-testdata >/dev/null 2>&1; then
	echo "=== installing libonnx-testdata"
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libonnx-testdata >/dev/null
fi
ONNX_TESTDATA=$(dpkg -L libonnx-testdata | grep -m1 '/data/node$' || true)
if [ -z "$ONNX_TESTDATA" ] || [ ! -d "$ONNX_TESTDATA" ]; then
	echo "libonnx-testdata is installed but holds no data/node directory" >&2
	exit 1
fi
export ONNX_TESTDATA
echo "=== ONNX node tests from $ONNX_TESTDATA ($(dpkg-query -W -f='${Version}' libonnx-testdata))"

cd tests/onnx
go generate ./...
GOARCH=amd64 go vet ./...
GOARCH=arm64 go vet ./...

echo "=== native"
go test -count=1 -v -run 'TestNodeTests' . | grep -v -e '^=== RUN' -e '^    --- PASS'
go test -count=1 ./...
if [ "$(go env GOARCH)" = amd64 ]; then
	for env in "GODEBUG=cpu.avx512f=off" "GODEBUG=cpu.avx512f=off,cpu.avx2=off,cpu.fma=off"; do
		echo "=== $env"
		env "$env" go test -count=1 -run 'TestNodeTests|TestLayerNormNoBias' .
	done
fi
echo "=== purego"
go test -count=1 -tags purego -run 'TestNodeTests|TestLayerNormNoBias' .
if command -v qemu-aarch64-static >/dev/null; then
	echo "=== arm64 under qemu-user"
	GOARCH=arm64 go test -count=1 -exec qemu-aarch64-static -run 'TestNodeTests|TestLayerNormNoBias' .
else
	echo "=== arm64 not run: qemu-aarch64-static is missing (scripts/test.sh installs it)"
fi
echo "=== ONNX node tests passed"
