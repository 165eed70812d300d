package store

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ReleaseMemory drops the pages of the store file mapped into this
// process from its resident memory. bbolt reads through a memory map of
// the whole file, so reading every run (runs list --all through serve)
// would leave the file's pages counted in serve's RSS; released, they stay
// in the kernel's page cache and the next read maps them again. The map is
// read-only (bbolt writes with pwrite), so nothing is lost.
func (s *DB) ReleaseMemory() error {
	path, err := filepath.Abs(s.db.Path())
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f..-7f.. r--s 00000000 fd:01 1234   /path/to/gc.db
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Join(fields[5:], " ") != path {
			continue
		}
		from, to, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(from, 16, 64)
		end, err2 := strconv.ParseUint(to, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("releasing the store's mapped pages: %w", errno)
		}
	}
	return sc.Err()
}
