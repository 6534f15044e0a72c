// Package harness holds what the AVX-512 test runner shares between the guest
// (tests/avx512/guestinit, which runs test binaries and prints verdict lines)
// and the host (tests/avx512/runner, which prepares the guest's files and
// checks its output): the configuration, the format of the verdict lines, the
// code that runs the binaries, the code that judges a log, and an initramfs
// (cpio) writer.
package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

// Config says which test binaries to run and how.
type Config struct {
	// Tests are run one after the other, in this order.
	Tests []Test `json:"tests"`
	// Args are given to every binary, after -test.v.
	Args []string `json:"args,omitempty"`
	// Env entries (KEY=VALUE) are added to every binary's environment.
	Env []string `json:"env,omitempty"`
	// RequireISA, when set, makes a binary fail unless its output holds the
	// line "normgen dispatch: <RequireISA>" (printed by the generated
	// packages' TestDispatch).
	RequireISA string `json:"require_isa,omitempty"`
}

// Test is one test binary.
type Test struct {
	// Name identifies the binary in verdict lines: no white space.
	Name string `json:"name"`
	// Path is the binary's path (in the guest, or on the host when run
	// natively).
	Path string `json:"path"`
	// Dir is the working directory (where testdata/ is looked for); empty
	// means a fresh empty directory.
	Dir string `json:"dir,omitempty"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	if len(c.Tests) == 0 {
		return fmt.Errorf("no test binaries configured")
	}
	seen := map[string]bool{}
	for i, t := range c.Tests {
		switch {
		case !nameRE.MatchString(t.Name):
			return fmt.Errorf("test %d: bad name %q (want letters, digits, . _ + -)", i+1, t.Name)
		case seen[t.Name]:
			return fmt.Errorf("test %d: duplicate name %q", i+1, t.Name)
		case t.Path == "":
			return fmt.Errorf("test %q: no path", t.Name)
		}
		seen[t.Name] = true
	}
	if c.RequireISA != "" && !nameRE.MatchString(c.RequireISA) {
		return fmt.Errorf("bad ISA name %q", c.RequireISA)
	}
	return nil
}

// ReadConfig reads and validates a JSON configuration file.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parsing configuration %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("configuration %s: %w", path, err)
	}
	return &c, nil
}

// WriteConfig validates c and writes it as JSON.
func WriteConfig(path string, c *Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
