package lowmem

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitRatio is the share of the container's memory limit the Go heap
// may grow to before the garbage collector works harder: the rest is for
// the runtime, goroutine stacks and what the OS counts outside the heap.
const memoryLimitRatio = 0.9

// Where cgroup v2 and v1 say the container's memory limit.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// MemoryLimit is the Go soft memory limit (debug.SetMemoryLimit) the
// controller sets, in bytes; 0 means leave the runtime as it is.
//
//   - flag "off" (or "0"): none, even over $GOMEMLIMIT (math.MaxInt64, the
//     runtime's "no limit");
//   - flag a quantity ("96Mi", "200M"): that;
//   - flag "" (the default): none when $GOMEMLIMIT is set (the runtime
//     already applied it), else 90% of the container's cgroup memory limit,
//     else none.
//
// Without a limit the heap grows to twice what is live before a collection
// (GOGC=100), which is most of the controller's RSS at scale; with one, the
// collector runs earlier as the heap nears it.
func MemoryLimit(flag string, envSet bool, cgroupLimit int64) (int64, error) {
	switch flag {
	case "off", "0":
		return math.MaxInt64, nil
	case "":
		if envSet || cgroupLimit <= 0 {
			return 0, nil
		}
		return int64(float64(cgroupLimit) * memoryLimitRatio), nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("--memory-limit %q: want a quantity such as 96Mi, or off", flag)
	}
	return q.Value(), nil
}

// ApplyGCSettings sets the Go GC target to gcPercent unless $GOGC is set,
// and the soft memory limit MemoryLimit(memLimit, ...) says (returned; 0:
// none set). The controller and the bridge share it (--gc-percent,
// --memory-limit).
func ApplyGCSettings(gcPercent int, memLimit string) (int64, error) {
	_, envSet := os.LookupEnv("GOMEMLIMIT")
	limit, err := MemoryLimit(memLimit, envSet, cgroupMemoryLimit())
	if err != nil {
		return 0, err
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return limit, nil
}

// cgroupMemoryLimit reads the container's memory limit; 0 when there is none
// ("max", or v1's page-rounded huge number) or it cannot be read.
func cgroupMemoryLimit() int64 {
	for _, f := range cgroupMemoryFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		return parseCgroupLimit(string(b))
	}
	return 0
}

func parseCgroupLimit(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 {
		return 0
	}
	return n
}
