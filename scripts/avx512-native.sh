#!/usr/bin/env bash
# Runs normgen's test binaries and benchmarks natively on an x86-64 machine
# with AVX-512: no Go toolchain needed there, only bash and coreutils. Copy
# this script and the binaries (CGO_ENABLED=0 go test -c) to the machine.
# See tests/avx512/README.md.
set -euo pipefail
# Bash reads a script as it runs it: the braces make it read all of it first,
# so that editing (or checking out) this file during a run cannot break it.
{

prog=avx512-native
usage() {
	cat <<'EOF'
usage: avx512-native.sh [options] BIN[@PKGDIR]... [-- TESTARGS...]

For each BIN: runs all its tests (-test.v, NORMGEN_REQUIRE_ISA=avx512) and
requires the line "normgen dispatch: avx512", then its benchmarks
(-test.run '^$' -test.bench . ). Writes everything to a results directory:
  summary.txt        machine, CPU, verdicts
  tests-NAME.txt     each binary's test output
  bench-avx512.txt   benchmarks, in the format benchstat reads
  bench-fallback.txt with --compare: the same with GODEBUG=cpu.avx512f=off
                     (benchstat bench-fallback.txt bench-avx512.txt)
With @PKGDIR a binary runs in PKGDIR (for its testdata/), as under go test.

options:
  --out DIR              results directory (default ./avx512-results-HOST-DATE)
  --benchtime T          -test.benchtime (default 1s; e.g. 2s or 1000x)
  --count N              -test.count for benchmarks (default 5, for benchstat)
  --bench REGEXP         -test.bench (default .)
  --no-bench             tests only
  --compare              also benchmark the fallback (GODEBUG=cpu.avx512f=off)
  --no-dispatch-check    do not require "normgen dispatch: avx512"
exit status: 0 all passed, 1 a test or benchmark failed, 2 usage error or no
AVX-512 on this CPU.
EOF
}

say() { printf '%s: %s\n' "$prog" "$*"; }
die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 2
}

out=
benchtime=1s
count=5
bench=.
do_bench=1
compare=0
dispatch_check=1
bins=()
test_args=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift ;;
	--out=*) out=${1#*=} ;;
	--benchtime) [ $# -ge 2 ] || die "--benchtime needs a value"; benchtime=$2; shift ;;
	--benchtime=*) benchtime=${1#*=} ;;
	--count) [ $# -ge 2 ] || die "--count needs a number"; count=$2; shift ;;
	--count=*) count=${1#*=} ;;
	--bench) [ $# -ge 2 ] || die "--bench needs a regexp"; bench=$2; shift ;;
	--bench=*) bench=${1#*=} ;;
	--no-bench) do_bench=0 ;;
	--compare) compare=1 ;;
	--no-dispatch-check) dispatch_check=0 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; test_args=("$@"); break ;;
	-*) usage >&2; die "unknown option $1" ;;
	*) bins+=("$1") ;;
	esac
	shift
done
[ ${#bins[@]} -gt 0 ] || { usage >&2; die "no test binaries given"; }
case $count in '' | *[!0-9]*) die "--count wants a number, not '$count'" ;; esac

[ "$(uname -m)" = x86_64 ] || die "this is $(uname -m), not x86-64"
# NORMGEN_CPUINFO: another cpuinfo file, to test this check.
cpuinfo=${NORMGEN_CPUINFO:-/proc/cpuinfo}
if ! grep -qw avx512f "$cpuinfo"; then
	model=$(grep -m1 '^model name' "$cpuinfo" | cut -d: -f2- | sed 's/^ *//' || true)
	die "this CPU (${model:-unknown}) has no AVX-512 (no avx512f in /proc/cpuinfo); scripts/avx512-bochs.sh emulates it"
fi

# Check every binary before running any.
for b in "${bins[@]}"; do
	bin=${b%@*}
	[ -f "$bin" ] || die "$bin: no such file"
	[ -x "$bin" ] || die "$bin: not executable"
	[ "$(head -c 4 "$bin" | od -An -c | tr -d ' \n')" = '177ELF' ] || die "$bin: not an ELF executable"
	if [ "$b" != "$bin" ]; then
		[ -d "${b##*@}" ] || die "$b: ${b##*@} is not a directory"
	fi
done

out=${out:-./avx512-results-$(hostname -s 2>/dev/null || echo host)-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(hostname 2>/dev/null || echo '?')"
	echo "kernel: $(uname -sr)"
	echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "cpus: $(grep -c '^processor' /proc/cpuinfo)"
	echo "avx512 flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep '^avx512' | tr '\n' ' ')"
	echo "benchmarks: -test.bench '$bench' -test.benchtime $benchtime -test.count $count$([ "$do_bench" = 1 ] || echo ' (not run)')"
	echo
} >"$summary"
: >"$out/bench-avx512.txt"
[ "$compare" = 1 ] && : >"$out/bench-fallback.txt"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/normgen-avx512-native.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

verdict() { printf '%s\n' "$*" | tee -a "$summary"; }

failed=0
passed=0
declare -A used=()
for b in "${bins[@]}"; do
	bin=${b%@*}
	bin_abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
	name=$(basename "$bin" | tr -c 'A-Za-z0-9._+\n-' '_')
	base=$name
	i=2
	while [ -n "${used[$name]:-}" ]; do name=$base-$i; i=$((i + 1)); done
	used[$name]=1
	if [ "$b" != "$bin" ]; then
		dir=${b##*@}
	else
		dir=$scratch/$name
		mkdir -p "$dir"
	fi
	problems=()

	say "$name: tests"
	log=$out/tests-$name.txt
	rc=0
	(cd "$dir" && NORMGEN_REQUIRE_ISA=avx512 "$bin_abs" -test.v "${test_args[@]+"${test_args[@]}"}") >"$log" 2>&1 || rc=$?
	[ $rc -eq 0 ] || problems+=("tests failed (exit status $rc; see $log)")
	if [ "$dispatch_check" = 1 ] && ! grep -q 'normgen dispatch: avx512' "$log"; then
		seen=$(grep -o 'normgen dispatch: [A-Za-z0-9_.+-]*' "$log" | sed 's/.*: //' | sort -u | tr '\n' ' ' || true)
		why="no dispatch line: no TestDispatch, or a -test.run that skips it"
		[ -z "$seen" ] || why="the dispatch chose ${seen% }"
		problems+=("did not print \"normgen dispatch: avx512\" ($why)")
	fi

	if [ "$do_bench" = 1 ]; then
		say "$name: benchmarks"
		rc=0
		(cd "$dir" && "$bin_abs" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" \
			-test.count "$count" -test.benchmem) >"$scratch/bench.txt" 2>&1 || rc=$?
		cat "$scratch/bench.txt" >>"$out/bench-avx512.txt"
		[ $rc -eq 0 ] || problems+=("benchmarks failed (exit status $rc; see bench-avx512.txt)")
		if [ "$compare" = 1 ]; then
			say "$name: benchmarks with GODEBUG=cpu.avx512f=off"
			rc=0
			(cd "$dir" && GODEBUG=cpu.avx512f=off "$bin_abs" -test.run '^$' -test.bench "$bench" \
				-test.benchtime "$benchtime" -test.count "$count" -test.benchmem) >"$scratch/bench.txt" 2>&1 || rc=$?
			cat "$scratch/bench.txt" >>"$out/bench-fallback.txt"
			[ $rc -eq 0 ] || problems+=("fallback benchmarks failed (exit status $rc; see bench-fallback.txt)")
		fi
	fi

	if [ ${#problems[@]} -eq 0 ]; then
		passed=$((passed + 1))
		verdict "$prog: $name: PASS"
	else
		failed=$((failed + 1))
		for p in "${problems[@]}"; do verdict "$prog: $name: FAIL: $p"; done
	fi
done

if [ "$failed" -eq 0 ]; then
	verdict "$prog: PASS: $passed passed, 0 failed"
else
	verdict "$prog: FAIL: $passed passed, $failed failed"
fi
say "results in $out"
[ "$failed" -eq 0 ] || exit 1
exit 0
}
