package engine

import "testing"

func TestSwapRefusal(t *testing.T) {
	for _, tc := range []struct {
		name                                       string
		started, frozen, freezer, layered, running bool
		want                                       string
	}{
		{"swappable", true, false, true, true, true, ""},
		{"stopped or starting", true, false, true, true, false, "not running"},
		{"adopted after an engine restart", false, false, true, true, true, "its container was not started by this engine with a swappable workspace"},
		{"paused", true, true, true, true, true, "paused"},
		{"no freezer", true, false, false, true, true, "no freezer cgroup to stop its processes with"},
		{"copies", true, false, true, false, true, "workspaces are copies, not overlays"},
	} {
		if got := swapRefusal(tc.started, tc.frozen, tc.freezer, tc.layered, tc.running); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
