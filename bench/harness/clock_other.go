//go:build !linux

package harness

func threadCPU() (int64, bool) { return 0, false }
