#!/usr/bin/env bash
# Runs static Go test binaries on an AVX-512 CPU: under the Bochs emulator
# (one boot for all of them) on a machine whose CPU lacks AVX-512, natively
# on one that has it. See tests/avx512/README.md.
set -euo pipefail
# Bash reads a script as it runs it: the braces make it read all of it first,
# so that editing (or checking out) this file during a run cannot break it.
{

prog=avx512-bochs
usage() {
	cat <<'EOF'
usage: scripts/avx512-bochs.sh [options] BIN[@PKGDIR]... [-- TESTARGS...]

Runs every BIN (built with CGO_ENABLED=0 go test -c) with -test.v TESTARGS and
NORMGEN_REQUIRE_ISA=avx512, in one Bochs boot with an AVX-512 CPU model, or
natively when /proc/cpuinfo shows avx512f. Exits 0 only if every binary
exited 0 and printed "normgen dispatch: avx512". With @PKGDIR, the binary
runs where PKGDIR/testdata is found, as under go test (seed corpora).

options:
  --force-bochs          use Bochs even on a CPU with AVX-512
  --no-dispatch-check    do not require "normgen dispatch: avx512" (fixtures only)
  --env KEY=VALUE        add to every binary's environment (repeatable)
  --timeout SECONDS      limit for the whole run (default 1200, or
                         $AVX512_BOCHS_TIMEOUT)
  --test-timeout DUR     -test.timeout for each binary (default 10m)
  --cpu MODEL            Bochs CPU model (default corei7_skylake_x)
  --megs N               guest memory in MiB (default: 512 + 2 x the binaries)
  --cache DIR            download cache (default $NORMGEN_CACHE, else
                         $XDG_CACHE_HOME/normgen, else ~/.cache/normgen)
  --log FILE             also save the whole log (serial console) to FILE
  --keep                 keep the work directory
exit status: 0 all passed, 1 a binary failed or the guest did not finish,
2 usage or setup error.
EOF
}

say() { printf '%s: %s\n' "$prog" "$*"; }
die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 2
}

force_bochs=0
require_isa=avx512
timeout_s=${AVX512_BOCHS_TIMEOUT:-1200}
test_timeout=10m
cpu_model=corei7_skylake_x
megs=
cache=${NORMGEN_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/normgen}
save_log=
keep=0
envs=()
bins=()
test_args=()
while [ $# -gt 0 ]; do
	case $1 in
	--force-bochs) force_bochs=1 ;;
	--no-dispatch-check) require_isa= ;;
	--env) [ $# -ge 2 ] || die "--env needs KEY=VALUE"; envs+=("$2"); shift ;;
	--env=*) envs+=("${1#*=}") ;;
	--timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; timeout_s=$2; shift ;;
	--timeout=*) timeout_s=${1#*=} ;;
	--test-timeout) [ $# -ge 2 ] || die "--test-timeout needs a duration"; test_timeout=$2; shift ;;
	--test-timeout=*) test_timeout=${1#*=} ;;
	--cpu) [ $# -ge 2 ] || die "--cpu needs a model"; cpu_model=$2; shift ;;
	--cpu=*) cpu_model=${1#*=} ;;
	--megs) [ $# -ge 2 ] || die "--megs needs a number"; megs=$2; shift ;;
	--megs=*) megs=${1#*=} ;;
	--cache) [ $# -ge 2 ] || die "--cache needs a directory"; cache=$2; shift ;;
	--cache=*) cache=${1#*=} ;;
	--log) [ $# -ge 2 ] || die "--log needs a file"; save_log=$2; shift ;;
	--log=*) save_log=${1#*=} ;;
	--keep) keep=1 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; test_args=("$@"); break ;;
	-*) usage >&2; die "unknown option $1" ;;
	*) bins+=("$1") ;;
	esac
	shift
done
[ ${#bins[@]} -gt 0 ] || { usage >&2; die "no test binaries given"; }
case $timeout_s in '' | *[!0-9]*) die "--timeout wants whole seconds, not '$timeout_s'" ;; esac
case $megs in *[!0-9]*) die "--megs wants a number of MiB, not '$megs'" ;; esac
for b in "${bins[@]}"; do
	f=${b%@*}
	[ -f "$f" ] || die "$f: no such file (build it with CGO_ENABLED=0 go test -c)"
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$GO" ] || die "no Go toolchain (go in PATH or /usr/local/go/bin/go); on AVX-512 hardware without Go use scripts/avx512-native.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/normgen-avx512.XXXXXX")
bochs_pid=
# shellcheck disable=SC2317 # (called by the trap)
cleanup() {
	if [ -n "$bochs_pid" ] && kill -0 "$bochs_pid" 2>/dev/null; then
		kill "$bochs_pid" 2>/dev/null || true
		wait "$bochs_pid" 2>/dev/null || true
	fi
	if [ "$keep" = 1 ]; then
		say "work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The host-side helper, and the guest init (static, for the emulated machine).
(cd "$root" && "$GO" build -o "$work/runner" ./tests/avx512/runner) ||
	die "building tests/avx512/runner failed"
(cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "$GO" build -o "$work/guestinit" ./tests/avx512/guestinit) ||
	die "building tests/avx512/guestinit failed"

prepare_args=(-dir "$work" -init "$work/guestinit" -test-timeout "$test_timeout")
[ -n "$require_isa" ] && prepare_args+=(-require-isa "$require_isa")
prepare_args+=(-env "NORMGEN_REQUIRE_ISA=avx512")
for e in "${envs[@]+"${envs[@]}"}"; do prepare_args+=(-env "$e"); done
for a in "${test_args[@]+"${test_args[@]}"}"; do prepare_args+=(-arg "$a"); done

# finish judges the log, keeps a copy of it where asked (or on failure), and
# exits with the verdict.
finish() {
	local log=$1 mode=$2
	local rc=0
	"$work/runner" check -config "$work/guest.json" -log "$log" -tag "$prog" || rc=$?
	if [ -n "$save_log" ]; then
		cp "$log" "$save_log" && say "log saved to $save_log"
	elif [ $rc -ne 0 ]; then
		local kept
		kept=$(mktemp "${TMPDIR:-/tmp}/normgen-avx512-$mode.XXXXXX.log")
		cp "$log" "$kept" && say "the whole log is in $kept"
	fi
	[ $rc -eq 0 ] || exit 1
	exit 0
}

# ---------------------------------------------------------------- native
if [ "$force_bochs" = 0 ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
	say "this CPU has AVX-512 (avx512f in /proc/cpuinfo): running natively (--force-bochs to emulate)"
	"$work/runner" prepare -mode native "${prepare_args[@]}" "${bins[@]}" || die "preparing the run failed"
	set +e
	timeout --kill-after=10 "$timeout_s" "$work/guestinit" -config "$work/guest.json" 2>&1 |
		tr -d '\r' | tee "$work/native.log"
	[ "${PIPESTATUS[0]}" != 124 ] || say "stopped by the timeout (${timeout_s}s; --timeout to change)"
	set -e
	finish "$work/native.log" native
fi

# ---------------------------------------------------------------- Bochs
[ "$(uname -m)" = x86_64 ] || die "Bochs mode is set up for x86-64 Linux hosts only"

as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo "$@"
	else
		die "need root to run: $* (or install it by hand)"
	fi
}

# apt_get runs apt-get with its downloads kept in the cache, waiting for other
# apt runs to release the lock, and updates the package lists once if the
# first try fails (a fresh machine has none).
apt_get() {
	mkdir -p "$cache/apt/archives/partial"
	local opts=(-y -q -o DPkg::Lock::Timeout=600 -o "Dir::Cache::Archives=$cache/apt/archives")
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" "$@" >"$work/apt.log" 2>&1; then
		say "apt-get $1 failed; updating the package lists and trying again"
		as_root apt-get -q -o DPkg::Lock::Timeout=600 update >>"$work/apt.log" 2>&1 || true
		as_root env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" "$@" >>"$work/apt.log" 2>&1 || {
			tail -n 20 "$work/apt.log" >&2
			die "apt-get $* failed (log above)"
		}
	fi
}

# (No cpio: tests/avx512/runner writes the initramfs itself.)
packages=(bochs bochs-term bochsbios vgabios isolinux syslinux-common xorriso)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	apt_get install --no-install-recommends "${missing[@]}"
fi
bios=/usr/share/bochs/BIOS-bochs-latest
vgabios=/usr/share/vgabios/vgabios.bin
isolinux_bin=/usr/lib/ISOLINUX/isolinux.bin
ldlinux=/usr/lib/syslinux/modules/bios/ldlinux.c32
for f in "$bios" "$vgabios" "$isolinux_bin" "$ldlinux"; do
	[ -f "$f" ] || die "$f is missing although its package is installed"
done
command -v bochs >/dev/null || die "bochs is not in PATH although its package is installed"

# The kernel: Debian's own, the package that linux-image-amd64 depends on,
# cached as $cache/kernel/<package>.vmlinuz. Offline, or if the download fails,
# the newest cached kernel does.
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}
download_kernel() { # package, destination
	local d=$work/kdeb
	mkdir -p "$d"
	chmod 777 "$d" # apt-get download drops its privileges to _apt where it can
	(cd "$d" && apt-get -q download "$1" >"$work/apt.log" 2>&1) || {
		tail -n 5 "$work/apt.log" >&2
		return 1
	}
	dpkg-deb --fsys-tarfile "$d"/*.deb | tar -x -C "$d" --wildcards './boot/vmlinuz-*' || return 1
	local k
	for k in "$d"/boot/vmlinuz-*; do
		[ -f "$k" ] || return 1
		mv "$k" "$2.tmp" && mv "$2.tmp" "$2"
		break
	done
	rm -rf "$d"
}
mkdir -p "$cache/kernel"
kpkg=$(kernel_pkg || true)
if [ -z "$kpkg" ]; then
	as_root apt-get -q -o DPkg::Lock::Timeout=600 update >"$work/apt.log" 2>&1 || true
	kpkg=$(kernel_pkg || true)
fi
kernel=
if [ -n "$kpkg" ]; then
	kernel=$cache/kernel/$kpkg.vmlinuz
	if [ ! -s "$kernel" ]; then
		say "downloading the kernel ($kpkg, once: it is cached in $cache/kernel)"
		if download_kernel "$kpkg" "$kernel"; then
			# Older kernels are of no more use.
			find "$cache/kernel" -name '*.vmlinuz' ! -name "$kpkg.vmlinuz" -delete
		else
			say "could not download or unpack $kpkg"
			kernel=
		fi
	fi
else
	say "apt-cache does not know linux-image-amd64's kernel package"
fi
if [ -z "$kernel" ]; then
	# shellcheck disable=SC2012 # (the names are ours; ls sorts by time)
	kernel=$(ls -t "$cache"/kernel/*.vmlinuz 2>/dev/null | head -n 1 || true)
	[ -n "$kernel" ] || die "no kernel: none could be downloaded and none is cached in $cache/kernel"
	say "using the cached kernel $(basename "$kernel" .vmlinuz)"
fi

# NORMGEN_EMULATOR tells the tests which of the emulator's known deviations
# from the hardware to allow (tests/avx512/README.md).
"$work/runner" prepare -mode bochs "${prepare_args[@]}" -env NORMGEN_EMULATOR=bochs "${bins[@]}" || die "preparing the initramfs failed"
initrd_mib=$(($(stat -c %s "$work/initrd.cpio") / 1048576 + 1))
if [ -z "$megs" ]; then
	megs=$((512 + 2 * initrd_mib))
	megs=$(((megs + 31) / 32 * 32))
fi

# A bootable ISO: isolinux loads the kernel and the initramfs.
# clearcpuid=321,323 hides XSAVEC and XSAVES: Bochs reports a wrong compacted
# XSAVE size, the kernel then turns XSAVE off, and with it AVX and AVX-512.
mkdir -p "$work/iso/isolinux"
cp "$isolinux_bin" "$ldlinux" "$work/iso/isolinux/"
cp "$kernel" "$work/iso/vmlinuz"
mv "$work/initrd.cpio" "$work/iso/initrd.img"
cat >"$work/iso/isolinux/isolinux.cfg" <<'EOF'
DEFAULT normgen
PROMPT 0
TIMEOUT 0
LABEL normgen
  KERNEL /vmlinuz
  APPEND initrd=/initrd.img console=ttyS0,115200 clearcpuid=321,323 mitigations=off tsc=reliable nokaslr quiet panic=0
EOF
xorriso -as mkisofs -quiet -o "$work/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
	-no-emul-boot -boot-load-size 4 -boot-info-table "$work/iso" >"$work/xorriso.log" 2>&1 || {
	cat "$work/xorriso.log" >&2
	die "xorriso failed to make the boot ISO"
}
rm -rf "$work/iso"

# Debian's Bochs has no headless display: rfb without waiting for a client is
# the closest. It starts in its debugger: the rc file says "continue".
# ips sets the emulated timers (PIT, HPET, APIC) in instructions per second;
# the guest's clock, though, is its TSC, which the kernel takes to run at the
# model's 3.5 GHz while Bochs executes some 50 million instructions per real
# second: guest time runs about 70 times slower than real time, so
# -test.timeout hardly ever fires and the host's timeout is what guards.
cat >"$work/bochsrc" <<EOF
megs: $megs
cpu: model=$cpu_model, count=1, ips=50000000, reset_on_triple_fault=0
romimage: file=$bios
vgaromimage: file=$vgabios
ata0-master: type=cdrom, path="$work/boot.iso", status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev="$work/serial.log"
display_library: rfb, options="timeout=0"
clock: sync=none, time0=local
mouse: enabled=0
speaker: enabled=0
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
log: $work/bochs.log
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
EOF
echo c >"$work/bochs.rc"
: >"$work/serial.log"

say "booting Bochs ($cpu_model, $megs MiB, ${#bins[@]} binaries, $initrd_mib MiB initramfs, timeout ${timeout_s}s); the kernel alone takes about 2 minutes to start"
start=$(date +%s)
(cd "$work" && exec timeout --kill-after=10 "$timeout_s" bochs -q -f "$work/bochsrc" -rc "$work/bochs.rc" >"$work/bochs.out" 2>&1 </dev/null) &
bochs_pid=$!

# Stream the serial console while Bochs runs; stop Bochs early on a kernel
# panic, or if it does not power off after the final line.
printed=0
final_at=
started_at=
stopped_by=
while kill -0 "$bochs_pid" 2>/dev/null; do
	sleep 2
	size=$(stat -c %s "$work/serial.log")
	if [ "$size" -gt "$printed" ]; then
		# (|| true: tail may get SIGPIPE when the log grew meanwhile.)
		tail -c +$((printed + 1)) "$work/serial.log" | head -c $((size - printed)) | tr -d '\r' || true
		printed=$size
	fi
	now=$(date +%s)
	if [ -z "$started_at" ] && grep -q '^normgen-guest: started as init' "$work/serial.log"; then
		started_at=$now
	fi
	if [ -z "$final_at" ] && grep -q '^normgen-guest: FINAL' "$work/serial.log"; then
		final_at=$now
	fi
	if grep -q 'Kernel panic - not syncing' "$work/serial.log"; then
		sleep 3
		stopped_by="a kernel panic"
		kill "$bochs_pid" 2>/dev/null || true
		break
	fi
	if [ -n "$final_at" ] && [ $((now - final_at)) -gt 60 ]; then
		stopped_by="the guest not powering off"
		kill "$bochs_pid" 2>/dev/null || true
		break
	fi
done
bochs_rc=0
wait "$bochs_pid" || bochs_rc=$?
bochs_pid=
size=$(stat -c %s "$work/serial.log")
if [ "$size" -gt "$printed" ]; then
	tail -c +$((printed + 1)) "$work/serial.log" | tr -d '\r' || true
fi
end=$(date +%s)
boot_msg=
[ -n "$started_at" ] && boot_msg=", $((started_at - start))s of it until the guest init started"
say "Bochs ran $((end - start))s$boot_msg"
if [ -n "$stopped_by" ]; then
	say "stopped Bochs because of $stopped_by"
elif [ "$bochs_rc" = 124 ] || [ "$bochs_rc" = 137 ]; then
	say "Bochs was stopped by the timeout (${timeout_s}s; --timeout to change)"
fi
if [ -z "$started_at" ]; then
	say "the guest init never started; the last lines of Bochs's own log:"
	tail -n 15 "$work/bochs.out" "$work/bochs.log" 2>/dev/null | sed 's/^/    /' || true
fi
finish "$work/serial.log" bochs
}
