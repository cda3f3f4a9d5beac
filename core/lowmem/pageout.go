package lowmem

import (
	"strconv"
	"strings"
)

// The controller is one command of the sandpod binary (bridge, server,
// agent and controller in one, about 80 MB). Before main runs, the init
// functions of every package linked into it (about 900) have run, and the
// kernel maps each page they touched into the process together with its
// neighbours (fault-around, 64 KiB): the kwok bench found 45 MiB of the
// binary resident in the controller (RssFile), of which about 20 MiB it
// never touches again. They count in its RSS and in its container's memory
// until the kernel needs the memory. Once the controller has started, it
// asks the kernel to page its own read-only pages of the binary out
// (MADV_PAGEOUT); what it still uses faults back in.
//
// It marks those mappings MADV_RANDOM first: a page faulting back in then
// brings no readahead, so fault-around maps only pages the process has
// itself faulted in again, not the 64-128 KiB around each one. The
// reconcilers' code, the type data and pclntab the GC and the decoders
// read are scattered across the binary: with readahead, 30 MiB of it was
// resident again at 5,000 sandboxes, 21-22 MiB without (RssFile, the kwok
// bench). Pages the page-out cannot drop (dirty ones of a binary just
// written, pages another process maps) stay cached and are mapped around
// as before.

// mapping is one range of the process's address space.
type mapping struct{ start, end uintptr }

// readOnlyMappingsOf are the read-only, file-backed mappings of path
// (text, rodata, pclntab) in a /proc/<pid>/maps listing. Writable mappings
// are left alone: their pages may be the process's own (copy on write).
func readOnlyMappingsOf(maps, path string) []mapping {
	var out []mapping
	for _, line := range strings.Split(maps, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != path || len(f[1]) < 2 || f[1][0] != 'r' || f[1][1] != '-' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{start: uintptr(start), end: uintptr(end)})
	}
	return out
}
