//go:build !linux

package benchkit

func threadCPU() (int64, bool) { return 0, false }
