package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(self, false); err != nil {
		t.Errorf("this test binary: %v", err)
	}
	script := filepath.Join(t.TempDir(), "x.test")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(script, true); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0 go test -c") {
		t.Errorf("script: %v", err)
	}
	if err := checkBinary(filepath.Join(t.TempDir(), "none"), true); err == nil {
		t.Error("missing file: no error")
	}
}

func TestUniqueName(t *testing.T) {
	used := map[string]bool{}
	var got []string
	for _, b := range []string{"out/a/ops.test", "out/b/ops.test", "x/we ird:name.test", "ops.test"} {
		got = append(got, uniqueName(b, used))
	}
	want := "ops.test ops.test-2 we_ird_name.test ops.test-3"
	if strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
