package cgroups

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Socket buffers on cgroup v1. The kernel charges the memory held in a
// socket's queues (TCP and UDP) to the socket's memory cgroup only where
// that cgroup's memory.kmem.tcp.limit_in_bytes was set (cgroup v2 always
// charges it to memory.max); runc ignores the spec's kernelTCP. Without it a
// sandbox's queues came out of the host's one TCP budget (tcp_mem, shared
// by every socket of the machine): 16 loopback connections it never read
// held 167 MiB of the host's while its 128 MiB cgroup showed 50, and ~150
// of them (its open-file limit allows 10,000) reach the ceiling, past which
// every TCP connection of the host, serve's API included, stalls. pasta's
// sockets on the host are charged the same way: it joins the container's
// memory cgroup before it opens any (Layout.accountingProcs).

// defaultSocketMemory caps the socket buffers of a sandbox without a memory
// limit (the default python template has none).
const defaultSocketMemory = 256 << 20

// SocketMemoryLimit is the most a sandbox's socket queues may hold: its
// memory limit (memLimit, 0 for none: defaultSocketMemory), never more than
// an eighth of the host's TCP ceiling (hostMax bytes, 0 when unknown), so
// that it takes several sandboxes at their caps to reach it.
func SocketMemoryLimit(memLimit, hostMax int64) int64 {
	limit := int64(defaultSocketMemory)
	if memLimit > 0 {
		limit = memLimit
	}
	if hostMax > 0 {
		limit = min(limit, hostMax/8)
	}
	return limit
}

// parseTCPMem reads the ceiling (the third value, in pages) of
// /proc/sys/net/ipv4/tcp_mem, in bytes; 0 when it cannot.
func parseTCPMem(s string, pageSize int) int64 {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0
	}
	pages, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || pages <= 0 || pages > math.MaxInt64/int64(pageSize) {
		return 0
	}
	return pages * int64(pageSize)
}

// HostTCPMemMax is the host's TCP ceiling in bytes, 0 when unknown.
func HostTCPMemMax() int64 {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_mem")
	if err != nil {
		return 0
	}
	return parseTCPMem(string(b), os.Getpagesize())
}

// limitSocketMemory turns on the charging of the container's socket queues
// to its memory cgroup (cgroup v1) with limit bytes at most. It runs before
// the gate opens, so every socket of the sandbox (and pasta's) is made in a
// cgroup that charges it. Nothing to do on cgroup v2 or a kernel without the
// file; a write that fails fails the start rather than run the sandbox
// without the cap.
func (l Layout) LimitSocketMemory(id string, limit int64) error {
	f := l.socketMemoryFile(id)
	if f == "" || !ContainerIDPattern.MatchString(id) {
		return nil
	}
	if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(f, []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		return fmt.Errorf("cap the sandbox's socket buffers: %w", err)
	}
	return nil
}
