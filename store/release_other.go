//go:build !linux

package store

// ReleaseMemory does nothing on this system.
func (s *DB) ReleaseMemory() error { return nil }
