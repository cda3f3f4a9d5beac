package lowmem

import "time"

// DefaultGCPercent is the controller's GOGC. Go's default, 100, lets the
// heap grow to twice what is live; at 5,000 sandboxes that was about 60 MiB
// of a 115 MiB RSS. The controller's CPU is small beside kube-apiserver's
// (a tenth of it in the kwok bench's bursts), so it collects more often to
// hold half as much garbage.
const DefaultGCPercent = 50

// A start decodes every cached object in a second or two and then
// reconciles every sandbox at once: the heap grows from nothing to what is
// live while most of what it allocates is garbage, and with 5,000
// sandboxes that, not the steady state, set the controller's peak RSS
// (the kwok bench: 84-89 MiB anonymous at the start against 75-77 at
// 5,000 once running). The GC target is halved for that spell: more collections for a
// few seconds, a lower peak. It ends StartupWindow after the caches have
// synced (the first pass over every sandbox took 2-6 s with 5,000).
const StartupWindow = 30 * time.Second

// StartupGCPercent is the GC target during the start for a steady one of
// p: half of it, not under 10; off (negative) stays off.
func StartupGCPercent(p int) int {
	if p < 0 {
		return p
	}
	return max(p/2, min(p, 10))
}
