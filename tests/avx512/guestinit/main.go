//go:build linux

// Command guestinit runs a list of static Go test binaries and prints one
// verdict line per binary and a final verdict line.
//
// It is the init program (PID 1) of the initramfs that scripts/avx512-bochs.sh
// boots under Bochs: as PID 1 it mounts /proc, /sys, /dev and /tmp, reads its
// configuration from /normgen/guest.json, runs the binaries, syncs, waits for
// the serial port to drain and powers the machine off.
//
// Started as an ordinary process (scripts/avx512-bochs.sh does this on a CPU
// that has AVX-512), it reads the configuration named by -config, runs the
// binaries the same way and exits 0 only if all of them passed, so that both
// paths produce the same output and are checked by the same host-side code
// (tests/avx512/runner).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/normgen/normgen/tests/avx512/harness"
)

// guestConfig is where the initramfs holds the configuration.
const guestConfig = "/normgen/guest.json"

func main() {
	if os.Getpid() == 1 {
		asInit()
		return // not reached: asInit powers off
	}
	configPath := flag.String("config", "", "configuration file (JSON, see tests/avx512/harness)")
	flag.Parse()
	if *configPath == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: guestinit -config FILE")
		os.Exit(2)
	}
	cfg, err := harness.ReadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s%s\n", harness.Prefix, err)
		fmt.Printf("%sFINAL FAIL (bad configuration)\n", harness.Prefix)
		os.Exit(1)
	}
	if !harness.Run(cfg, os.Stdout) {
		os.Exit(1)
	}
}

// asInit is PID 1 inside the emulator. It never returns: whatever happens, it
// ends by powering off, because a PID 1 that exits panics the kernel and leaves
// Bochs running until the host's timeout.
func asInit() {
	defer func() {
		if r := recover(); r != nil {
			fmt.Printf("\n%sFINAL FAIL (guestinit panicked: %v)\n", harness.Prefix, r)
		}
		powerOff()
	}()
	fmt.Printf("%sstarted as init\n", harness.Prefix)
	mountAll()
	cfg, err := harness.ReadConfig(guestConfig)
	if err != nil {
		fmt.Printf("%s%v\n", harness.Prefix, err)
		fmt.Printf("%sFINAL FAIL (bad configuration)\n", harness.Prefix)
		return
	}
	harness.Run(cfg, os.Stdout)
}

// mountAll mounts the file systems that Go test binaries expect. /proc and
// /tmp are required (the runtime and t.TempDir use them); /dev and /sys only
// help, so their failures are reported and ignored.
func mountAll() {
	for _, m := range []struct {
		fstype, target string
		required       bool
	}{
		{"proc", "/proc", true},
		{"tmpfs", "/tmp", true},
		{"sysfs", "/sys", false},
		{"devtmpfs", "/dev", false},
	} {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			fmt.Printf("%smkdir %s: %v\n", harness.Prefix, m.target, err)
		}
		if err := syscall.Mount(m.fstype, m.target, m.fstype, 0, ""); err != nil {
			level := "warning"
			if m.required {
				level = "error"
			}
			fmt.Printf("%s%s: mount %s on %s: %v\n", harness.Prefix, level, m.fstype, m.target, err)
		}
	}
	// The init environment from the kernel is nearly empty.
	for k, v := range map[string]string{
		"PATH":   "/bin:/normgen/bin",
		"HOME":   "/tmp",
		"TMPDIR": "/tmp",
	} {
		os.Setenv(k, v)
	}
	// Keep late kernel messages (e.g. "random: crng init done") from
	// splitting the test output lines on the serial console.
	_ = os.WriteFile("/proc/sys/kernel/printk", []byte("1"), 0o644)
	_ = os.MkdirAll(filepath.Join("/tmp", "run"), 0o755)
}

// powerOff flushes everything to the serial port and switches the machine off,
// which makes Bochs exit.
func powerOff() {
	syscall.Sync()
	// The serial output still in flight is lost if the machine goes down
	// at once.
	time.Sleep(3 * time.Second)
	fmt.Printf("%spowering off\n", harness.Prefix)
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Printf("%spower off failed: %v\n", harness.Prefix, err)
	}
	for {
		time.Sleep(time.Hour)
	}
}
