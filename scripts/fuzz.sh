#!/usr/bin/env bash
# The fuzz campaign: runs every generated fuzz target of every
# package under out/ for a set time, on every instruction set this machine
# can reach:
#   amd64        natively: AVX-512 (where the CPU has it) and AVX2, both
#                compared with pure Go by each target;
#   amd64-avx2   natively with GODEBUG=cpu.avx512f=off, so that dispatch
#                and AVX2 run as on a CPU without AVX-512 (only where the
#                CPU has AVX-512: elsewhere that is the amd64 run);
#   arm64        NEON under qemu-user, through binfmt_misc: go test -fuzz
#                starts its workers itself, not through -exec.
# It prints a table of executions per target and lists the crashers: new
# files under out/*/testdata/fuzz/, to be committed as regression seeds
# (--commit does that) and fixed.
set -euo pipefail

prog=fuzz
usage() {
	cat <<'EOF'
usage: scripts/fuzz.sh [options]

Runs each fuzz target (go test -list 'Fuzz.*' ./out/PKG) of each package in
out/ with go test -fuzz for DURATION per target and variant, one at a time.

options:
  --time DURATION      -fuzztime per target and variant (default 30s; Go
                       duration, or Nx for N executions)
  --pkg NAME           only this package of out/ (repeatable)
  --run REGEX          only targets matching REGEX (grep -E)
  --variants LIST      comma-separated, of amd64, amd64-avx2, arm64 (default:
                       all that apply here)
  --parallel N         fuzz workers per run (default: go test's, GOMAXPROCS)
  --logs DIR           keep each run's output in DIR (default: a new
                       directory under ${TMPDIR:-/tmp}, printed at the end)
  --keep-binfmt        leave qemu-aarch64 registered with binfmt_misc if this
                       script registered it (default: undo on exit)
  --commit             git add and commit the crashers as regression seeds
  -n, --dry-run        list what would run, and set up nothing
exit status: 0 every run passed and found nothing, 1 a run failed or left a
crasher, 2 usage or setup error.

arm64 needs qemu-aarch64 (qemu-user-static) registered with binfmt_misc. If
arm64 binaries do not already execute, the script registers it as root
(mounting binfmt_misc if needed; through sudo -n when not root) and undoes
exactly that on exit, unless another fuzz.sh is still running, in which
case the last one out undoes it.
EOF
}

say() { printf '%s: %s\n' "$prog" "$*"; }
die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 2
}

fuzztime=30s
pkgs=()
run_re=
variants=
explicit=0
parallel=
logs=
keep_binfmt=0
commit=0
dry=0
while [ $# -gt 0 ]; do
	case $1 in
	--time | -time) [ $# -ge 2 ] || die "$1 needs a duration"; fuzztime=$2; shift ;;
	--time=* | -time=*) fuzztime=${1#*=} ;;
	--pkg | -pkg) [ $# -ge 2 ] || die "$1 needs a package name"; pkgs+=("$2"); shift ;;
	--pkg=* | -pkg=*) pkgs+=("${1#*=}") ;;
	--run | -run) [ $# -ge 2 ] || die "$1 needs a regular expression"; run_re=$2; shift ;;
	--run=* | -run=*) run_re=${1#*=} ;;
	--variants | -variants) [ $# -ge 2 ] || die "$1 needs a list"; variants=$2; explicit=1; shift ;;
	--variants=* | -variants=*) variants=${1#*=}; explicit=1 ;;
	--parallel | -parallel) [ $# -ge 2 ] || die "$1 needs a number"; parallel=$2; shift ;;
	--parallel=* | -parallel=*) parallel=${1#*=} ;;
	--logs | -logs) [ $# -ge 2 ] || die "$1 needs a directory"; logs=$2; shift ;;
	--logs=* | -logs=*) logs=${1#*=} ;;
	--keep-binfmt | -keep-binfmt) keep_binfmt=1 ;;
	--commit | -commit) commit=1 ;;
	-n | --dry-run | -dry-run) dry=1 ;;
	-h | --help | -help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument $1" ;;
	esac
	shift
done
[[ $fuzztime =~ ^([0-9]+x|([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+)$ ]] || die "--time $fuzztime: want a Go duration (30s, 2m) or Nx"
[ -z "$parallel" ] || [[ $parallel =~ ^[1-9][0-9]*$ ]] || die "--parallel $parallel: want a positive number"
if [ -n "$run_re" ]; then
	rc=0
	grep -Eq -- "$run_re" <<<"" 2>/dev/null || rc=$?
	[ "$rc" -le 1 ] || die "--run $run_re: not a valid regular expression"
fi

cd "$(dirname "$0")/.."
command -v go >/dev/null || die "no go command"
export GOFLAGS='' GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0
hostarch=$(go env GOHOSTARCH)

# The variants to run, each a name and its environment.
has_avx512=0
grep -qw avx512f /proc/cpuinfo 2>/dev/null && has_avx512=1
if [ -z "$variants" ]; then
	case $hostarch in
	amd64)
		variants=amd64
		[ $has_avx512 = 1 ] && variants+=,amd64-avx2
		variants+=,arm64
		;;
	arm64) variants=arm64 ;;
	*) die "host architecture $hostarch: no variant runs here" ;;
	esac
fi
IFS=, read -r -a vlist <<<"$variants"
notes=()
# venv VARIANT: the variant's environment, in the array vargs.
venv() {
	case $1 in
	amd64) vargs=(GOARCH=amd64) ;;
	amd64-avx2) vargs=(GOARCH=amd64 GODEBUG=cpu.avx512f=off) ;;
	arm64) vargs=(GOARCH=arm64) ;;
	*) return 1 ;;
	esac
}
for v in "${vlist[@]}"; do
	venv "$v" || die "unknown variant $v (want amd64, amd64-avx2, arm64)"
	if [ "$v" = amd64-avx2 ] && [ $has_avx512 = 0 ]; then
		notes+=("amd64-avx2: this CPU has no AVX-512, so it repeats the amd64 run")
	fi
	if [ "$v" != arm64 ] && [ "$hostarch" != amd64 ]; then
		die "variant $v needs an amd64 host (this is $hostarch)"
	fi
done
[ $has_avx512 = 1 ] || notes+=("this CPU has no AVX-512: AVX-512 code is not fuzzed (Bochs is too slow for -fuzz)")

# Packages under out/.
all=()
for d in out/*/; do
	if compgen -G "$d*_test.go" >/dev/null; then
		all+=("$(basename "$d")")
	fi
done
[ ${#all[@]} -gt 0 ] || die "no packages with tests under out/"
if [ ${#pkgs[@]} -eq 0 ]; then
	pkgs=("${all[@]}")
else
	for p in "${pkgs[@]}"; do
		[ -d "out/$p" ] || die "no package out/$p (have: ${all[*]})"
	done
fi

# binfmt_misc: make arm64 executables run, remembering what to undo.
# The undo list lives in a state file shared by concurrent runs, each of
# which holds a shared lock on it; whoever finds itself alone at exit (the
# exclusive lock is free) undoes it.
binfmt=/proc/sys/fs/binfmt_misc
state=/run/normgen-fuzz-binfmt
[ -d /run ] && [ -w /run ] || state=${TMPDIR:-/tmp}/normgen-fuzz-binfmt
lockfd=
SUDO=
as_root() { $SUDO "$@"; }
write_root() { # write_root FILE TEXT
	if [ -z "$SUDO" ]; then
		printf '%s' "$2" >"$1"
	else
		printf '%s' "$2" | $SUDO tee "$1" >/dev/null
	fi
}
probe_dir=
arm64_runs() {
	if [ -z "$probe_dir" ]; then
		probe_dir=$(mktemp -d)
		printf 'module probe\n\ngo 1.21\n' >"$probe_dir/go.mod"
		printf 'package main\n\nfunc main() {}\n' >"$probe_dir/main.go"
		(cd "$probe_dir" && GOARCH=arm64 GOOS=linux go build -o probe .) || die "cannot build an arm64 probe"
	fi
	"$probe_dir/probe" 2>/dev/null
}
binfmt_setup() {
	exec {lockfd}>>"$state.lock"
	flock -s "$lockfd"
	if arm64_runs; then
		return 0
	fi
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			SUDO="sudo -n"
		else
			return 1
		fi
	fi
	local qemu
	qemu=$(command -v qemu-aarch64-static) || {
		say "qemu-aarch64-static not found (apt-get install -y qemu-user-static)"
		return 1
	}
	# Changing the registration needs the lock to ourselves for a moment.
	if ! flock -x -w 120 "$lockfd"; then
		say "another fuzz.sh holds $state.lock"
		return 1
	fi
	if ! [ -e "$binfmt/register" ]; then
		as_root mount -t binfmt_misc binfmt_misc "$binfmt" || return 1
		echo mounted >>"$state"
	fi
	[ "$(cat "$binfmt/status")" = enabled ] || {
		write_root "$binfmt/status" 1
		echo status >>"$state"
	}
	if [ -e "$binfmt/qemu-aarch64" ]; then
		if ! grep -qx enabled "$binfmt/qemu-aarch64"; then
			write_root "$binfmt/qemu-aarch64" 1
			echo enabled >>"$state"
		fi
	else
		# ELF64, little-endian, EM_AARCH64 (0xb7); F: qemu is opened now,
		# so it is found from any mount namespace or chroot.
		local magic='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
		local mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
		# Written as text: the kernel decodes the \x escapes. (Raw bytes, as
		# bash's printf FORMAT would make, cut the magic at its first NUL,
		# and then every ELF64 binary, this machine's own included, goes
		# to qemu-aarch64.)
		write_root "$binfmt/register" ":qemu-aarch64:M::$magic:$mask:$qemu:F" || return 1
		echo registered >>"$state"
		if ! /bin/true; then
			write_root "$binfmt/qemu-aarch64" -1
			die "registering qemu-aarch64 broke native binaries; unregistered it"
		fi
	fi
	flock -s "$lockfd"
	arm64_runs || {
		say "qemu-aarch64 is registered, yet the arm64 probe does not run"
		return 1
	}
}
# shellcheck disable=SC2317 # called from the EXIT trap
binfmt_undo() {
	[ -n "$lockfd" ] || return 0
	if [ "$keep_binfmt" = 0 ] && [ -s "$state" ] && flock -xn "$lockfd"; then
		local what
		# Undo in reverse order of setup.
		for what in $(tac "$state"); do
			case $what in
			registered) [ -e "$binfmt/qemu-aarch64" ] && write_root "$binfmt/qemu-aarch64" -1 ;;
			enabled) [ -e "$binfmt/qemu-aarch64" ] && write_root "$binfmt/qemu-aarch64" 0 ;;
			status) write_root "$binfmt/status" 0 ;;
			mounted)
				# Leave it mounted if anything else registered meanwhile.
				local e others=0
				for e in "$binfmt"/*; do
					case ${e##*/} in register | status) ;; *) others=1 ;; esac
				done
				[ "$others" = 1 ] || as_root umount "$binfmt"
				;;
			esac || say "could not undo binfmt_misc step: $what"
		done
		rm -f "$state"
		say "binfmt_misc: restored"
	elif [ "$keep_binfmt" = 1 ] && [ -s "$state" ]; then
		say "binfmt_misc: qemu-aarch64 left registered (--keep-binfmt); $state lists what to undo"
	fi
	exec {lockfd}>&-
	lockfd=
}

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	binfmt_undo
	[ -z "$probe_dir" ] || rm -rf "$probe_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The crashers the fuzzer writes: new files under testdata/fuzz.
export LC_ALL=C # one sort order for sort and comm
seeds() { { find out/*/testdata/fuzz -type f 2>/dev/null || true; } | sort; }
seeds_before=$(seeds)

# What runs.
declare -a plan_v plan_p plan_t
for v in "${vlist[@]}"; do
	if [ "$v" = arm64 ] && [ "$hostarch" != arm64 ] && [ $dry = 0 ]; then
		if ! binfmt_setup; then
			why="arm64 binaries do not run here and qemu-aarch64 could not be registered with binfmt_misc (needs root)"
			[ $explicit = 0 ] || die "$why"
			notes+=("arm64: skipped: $why")
			continue
		fi
	fi
	for p in "${pkgs[@]}"; do
		venv "$v"
		list=$(env "${vargs[@]}" go test -list 'Fuzz.*' "./out/$p" 2>&1) || {
			if [ $dry = 1 ] && [ "$v" = arm64 ]; then
				list=$(go test -list 'Fuzz.*' "./out/$p" 2>&1) || die "listing ./out/$p: $list"
			else
				die "listing the fuzz targets of ./out/$p for $v: $list"
			fi
		}
		for t in $(grep -E '^Fuzz' <<<"$list" || true); do
			if [ -n "$run_re" ] && ! grep -Eq -- "$run_re" <<<"$t"; then
				continue
			fi
			plan_v+=("$v") plan_p+=("$p") plan_t+=("$t")
		done
	done
done
n=${#plan_t[@]}
[ "$n" -gt 0 ] || die "no fuzz target to run"
say "$n runs of $fuzztime each (${vlist[*]}; packages: ${pkgs[*]}), plus building and baselines"
if [ $dry = 1 ]; then
	for i in "${!plan_t[@]}"; do
		printf '  %-11s %-12s %s\n' "${plan_v[$i]}" "${plan_p[$i]}" "${plan_t[$i]}"
	done
	exit 0
fi

if [ -z "$logs" ]; then
	logs=$(mktemp -d "${TMPDIR:-/tmp}/normgen-fuzz.XXXXXX")
fi
mkdir -p "$logs"

# A run may take its fuzz time, plus building with coverage instrumentation,
# the baseline over the corpus, and minimizing a crasher (60 s by default).
limit=$((15 * 60))
rest=$fuzztime
while [[ $rest =~ ^([0-9]+)(\.[0-9]+)?(ns|us|ms|s|m|h)(.*)$ ]]; do
	case ${BASH_REMATCH[3]} in
	s) limit=$((limit + BASH_REMATCH[1])) ;;
	m) limit=$((limit + 60 * BASH_REMATCH[1])) ;;
	h) limit=$((limit + 3600 * BASH_REMATCH[1])) ;;
	esac
	rest=${BASH_REMATCH[4]}
done
[[ $fuzztime != *x ]] || limit=$((limit + 15 * 60))

declare -a res_execs res_rate res_status
failed=0
start_all=$(date +%s)
for i in "${!plan_t[@]}"; do
	v=${plan_v[$i]} p=${plan_p[$i]} t=${plan_t[$i]}
	log="$logs/$v.$p.$t.log"
	args=(test -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime")
	[ -z "$parallel" ] || args+=(-parallel "$parallel")
	say "[$((i + 1))/$n] $v $p $t"
	before=$(seeds)
	t0=$(date +%s)
	rc=0
	venv "$v"
	(cd "out/$p" && env "${vargs[@]}" timeout -k 30 "$limit" go "${args[@]}" .) >"$log" 2>&1 || rc=$?
	wall=$(($(date +%s) - t0))
	execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)
	secs=$(grep -oE '^fuzz: elapsed: [0-9]+s, execs' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)
	rate=-
	[ -z "$execs" ] || [ -z "$secs" ] || [ "$secs" = 0 ] || rate=$((execs / secs))
	new=$(comm -13 <(printf '%s\n' "$before") <(seeds) | grep -v '^$' || true)
	status=ok
	grep -q 'now fuzzing' "$log" || status="ok, baseline only: raise --time"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		status="TIMEOUT after ${wall}s"
	elif [ $rc != 0 ] && [ -z "$new" ] && grep -qx '    context deadline exceeded' "$log" &&
		! grep -q -e 'Failing input written' -e 'failure while testing seed corpus' "$log"; then
		# Go before 1.27 can report the end of -fuzztime as this failure
		# when a worker is still busy (go.dev/issue/75804): no input failed.
		status="$status (deadline race, go.dev/issue/75804)"
	elif [ $rc != 0 ]; then
		status="FAIL"
	fi
	[ -z "$new" ] || status="CRASHER"
	if [[ $status != ok* ]]; then
		failed=1
		say "  $status; the end of $log:"
		grep -vE '^fuzz: elapsed' "$log" | tail -n 15 | sed 's/^/    /'
	fi
	res_execs[i]=${execs:-0}
	res_rate[i]=$rate
	res_status[i]=$status
done
total_s=$(($(date +%s) - start_all))

echo
printf '%-11s %-12s %-26s %12s %9s  %s\n' variant package target execs execs/s result
total=0
for i in "${!plan_t[@]}"; do
	printf '%-11s %-12s %-26s %12s %9s  %s\n' "${plan_v[$i]}" "${plan_p[$i]}" "${plan_t[$i]}" \
		"${res_execs[$i]}" "${res_rate[$i]}" "${res_status[$i]}"
	total=$((total + res_execs[i]))
done
printf '%-51s %12s   in %dm%02ds\n' "total" "$total" $((total_s / 60)) $((total_s % 60))
for note in "${notes[@]}"; do
	say "note: $note"
done
say "logs: $logs"

crashers=$(comm -13 <(printf '%s\n' "$seeds_before") <(seeds) | grep -v '^$' || true)
if [ -n "$crashers" ]; then
	echo
	say "crashers (regression seeds: commit them, then fix what they show):"
	mapfile -t cfiles <<<"$crashers"
	printf '  %s\n' "${cfiles[@]}"
	if [ $commit = 1 ]; then
		git add -- "${cfiles[@]}"
		git commit -q -m "fuzz: regression seeds from scripts/fuzz.sh (${#cfiles[@]} crashers)" -- "${cfiles[@]}"
		say "committed: $(git log -1 --format='%h %s')"
	else
		say "to commit them: scripts/fuzz.sh ... --commit, or git add ${cfiles[*]} && git commit -m 'fuzz: regression seeds'"
	fi
fi
exit $failed
