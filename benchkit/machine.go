package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Machine records where a report was measured.
type Machine struct {
	CPU        string   // model name from /proc/cpuinfo
	Features   []string // the SIMD features that matter here, as the kernel reports them
	Cores      int      // logical CPUs
	Caches     []string // e.g. "L1d 48K", from sysfs
	Kernel     string
	Go         string // runtime.Version()
	GOARCH     string
	Experiment string // GOEXPERIMENT the binary was built with
	GOMAXPROCS int
	Date       time.Time
	Load       string   // /proc/loadavg at the start: other work on the machine
	Extra      []string // lines added by the caller (library versions, ...)
}

// interesting features, in display order.
var simdFlags = []string{"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "asimd", "sve"}

// ReadMachine describes the machine it runs on (Linux details when
// available; the rest elsewhere).
func ReadMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), GOARCH: runtime.GOARCH, GOMAXPROCS: runtime.GOMAXPROCS(0), Date: time.Now().UTC()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOEXPERIMENT" {
				m.Experiment = s.Value
			}
		}
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		var flags []string
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch k {
			case "model name":
				if m.CPU == "" {
					m.CPU = v
				}
			case "flags", "Features":
				if flags == nil {
					flags = strings.Fields(v)
				}
			}
		}
		f.Close()
		for _, fl := range simdFlags {
			if slices.Contains(flags, fl) {
				m.Features = append(m.Features, fl)
			}
		}
	}
	if m.CPU == "" {
		m.CPU = "unknown " + runtime.GOARCH
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	for _, c := range caches() {
		m.Caches = append(m.Caches, fmt.Sprintf("L%d%s %s", c.level, c.kind, sizeString(c.bytes)))
	}
	return m
}

type cache struct {
	level int
	kind  string // "d", "i", or "" for unified
	bytes int64
}

// caches reads cpu0's caches from sysfs.
func caches() []cache {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	var out []cache
	for _, d := range dirs {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(b))
		}
		level, _ := strconv.Atoi(read("level"))
		size := read("size")
		mult := int64(1)
		switch {
		case strings.HasSuffix(size, "K"):
			mult, size = 1<<10, strings.TrimSuffix(size, "K")
		case strings.HasSuffix(size, "M"):
			mult, size = 1<<20, strings.TrimSuffix(size, "M")
		}
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || level == 0 {
			continue
		}
		kind := ""
		switch read("type") {
		case "Data":
			kind = "d"
		case "Instruction":
			kind = "i"
		}
		out = append(out, cache{level, kind, n * mult})
	}
	slices.SortFunc(out, func(a, b cache) int { return a.level*4 + len(a.kind) - b.level*4 - len(b.kind) })
	return out
}

// LastLevelCache is the size of the largest cache level, or 32 MiB when the
// machine does not say.
func LastLevelCache() int64 {
	var best cache
	for _, c := range caches() {
		if c.kind != "i" && c.level >= best.level {
			best = c
		}
	}
	if best.bytes == 0 {
		return 32 << 20
	}
	return best.bytes
}

// Slug is a file-name-safe name for the machine: its CPU model, lower case.
func (m Machine) Slug() string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(m.CPU) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		case r == '(' || r == ')':
			// "Intel(R)" reads better as "intel-r"
			dash = true
		default:
			dash = true
		}
	}
	s := strings.ReplaceAll(b.String(), "-r-", "-")
	s = strings.ReplaceAll(s, "-tm-", "-")
	s = strings.TrimSuffix(s, "-r")
	if s == "" {
		s = "unknown"
	}
	return s
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
