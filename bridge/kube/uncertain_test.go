package kube

import (
	"testing"
	"time"
)

func TestUncertainTakes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var u uncertainTakes
	u.put("ns", "id-1", "pool-a", t0)
	u.put("other", "id-1", "pool-b", t0)
	if got := u.get("ns", "id-1"); got != "pool-a" {
		t.Errorf("get = %q, want pool-a", got)
	}
	if got := u.get("ns", "id-2"); got != "" {
		t.Errorf("an id never taken: %q", got)
	}
	u.drop("ns", "id-1")
	if got := u.get("ns", "id-1"); got != "" || u.get("other", "id-1") != "pool-b" {
		t.Errorf("drop: %q, other namespace %q", got, u.get("other", "id-1"))
	}
	// Takes nobody retried go once they are older than uncertainTTL.
	u.put("ns", "id-3", "pool-c", t0.Add(uncertainTTL+time.Second))
	if got := u.get("other", "id-1"); got != "" {
		t.Errorf("a take older than %s is still remembered: %q", uncertainTTL, got)
	}
	if got := u.get("ns", "id-3"); got != "pool-c" {
		t.Errorf("get = %q, want pool-c", got)
	}
}
