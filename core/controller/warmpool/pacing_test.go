package warmpool

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := NewPacer(time.Second)
	for _, step := range []struct {
		what string
		ms   int
		have int
		want bool
	}{
		{"first sight of a deficit", 0, 90, false},
		{"no claim since: not yet a delay", 900, 90, false},
		{"a claim (one member fewer) restarts the delay", 1000, 89, false},
		{"a delay after the first sight, but not after the claim", 1500, 89, false},
		{"a delay after the last claim", 2000, 89, true},
	} {
		if got, _ := p.Due("p", at(step.ms), step.have, 100); got != step.want {
			t.Errorf("%s: Due = %v, want %v", step.what, got, step.want)
		}
	}
	// The due pass creates 10: they are not a claim's doing, so the refill
	// goes on; a claim after them pauses it.
	p.Created("p", 10)
	if ok, _ := p.Due("p", at(2100), 99, 100); !ok {
		t.Errorf("the pass after a refill batch is held back with no claim since")
	}
	if ok, _ := p.Due("p", at(2200), 98, 100); ok {
		t.Errorf("a claim during the refill did not pause it")
	}
	p.Done("p")
	if ok, _ := p.Due("p", at(5000), 99, 100); ok {
		t.Errorf("Done did not reset the deficit")
	}
	// Below half its size a pool refills a delay after its deficit
	// appeared, claims or not.
	p.Done("p")
	p.Due("p", at(10000), 60, 100)
	p.Due("p", at(10900), 49, 100)
	if ok, _ := p.Due("p", at(11000), 48, 100); !ok {
		t.Errorf("a pool below half its size waited for the claims to pause")
	}
}
