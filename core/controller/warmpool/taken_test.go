package warmpool

import (
	"testing"
	"time"
)

func TestTaken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := NewTaken()
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
	tk.Release("ns", "a")
	if !tk.Reserve("ns", "a") {
		t.Error("a released member refused")
	}
	now = now.Add(takenHold)
	if !tk.Reserve("ns", "a") {
		t.Error("a member taken long ago (the cache has caught up) still refused")
	}
}
