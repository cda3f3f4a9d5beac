package lowmem

import (
	"os"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4+): reclaim the range's pages now.
const madvPageout = 21

// madvRandom is MADV_RANDOM: no readahead when a page of the range faults
// back in (see pageout.go).
const madvRandom = 1

// PageOutBinary pages out the read-only pages of the running binary (see
// pageout.go) and says how many bytes of mappings it advised. Best effort:
// an older kernel refuses the advice, and nothing else changes.
func PageOutBinary() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range readOnlyMappingsOf(string(maps), exe) {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, madvRandom); errno != 0 {
			return n, errno
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, madvPageout); errno != 0 {
			return n, errno
		}
		n += int64(m.end - m.start)
	}
	return n, nil
}
