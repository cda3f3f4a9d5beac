package engine

import "testing"

func TestSwapRefusal(t *testing.T) {
	for _, tc := range []struct {
		name                                                   string
		started, frozen, freezer, layered, running, rootInside bool
		want                                                   string
	}{
		{"swappable", true, false, true, true, true, false, ""},
		{"stopped or starting", true, false, true, true, false, false, "not running"},
		{"adopted after an engine restart", false, false, true, true, true, false, "its container was not started by this engine with a swappable workspace"},
		{"paused", true, true, true, true, true, false, "paused"},
		{"no freezer", true, false, false, true, true, false, "no freezer cgroup to stop its processes with"},
		{"copies", true, false, true, false, true, false, "workspaces are copies, not overlays"},
		{"root inside", true, false, true, true, true, true, "its commands run as root inside, which can reach pasta, a process outside the freezer cgroup"},
	} {
		if got := swapRefusal(tc.started, tc.frozen, tc.freezer, tc.layered, tc.running, tc.rootInside); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
