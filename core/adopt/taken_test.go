package adopt

import (
	"testing"
	"time"
)

func TestTaken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := NewTaken(nil)
	tk.now = func() time.Time { return now }
	if !tk.Reserve("ns", "a") {
		t.Fatal("first reserve refused")
	}
	if tk.Reserve("ns", "a") {
		t.Error("a member reserved twice")
	}
	if !tk.Reserve("other", "a") {
		t.Error("the same name in another namespace refused")
	}
	if !tk.Held("ns", "a") || tk.Held("ns", "b") {
		t.Error("Held does not match the reservations")
	}
	tk.Release("ns", "a")
	if tk.Held("ns", "a") {
		t.Error("a released member still held")
	}
	if !tk.Reserve("ns", "a") {
		t.Error("a released member refused")
	}
	now = now.Add(takenHold)
	if tk.Held("ns", "a") {
		t.Error("a member taken long ago still held")
	}
	if !tk.Reserve("ns", "a") {
		t.Error("a member taken long ago (the cache has caught up) still refused")
	}
}
