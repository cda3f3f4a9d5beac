package cli

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "30m": 30 * time.Minute, "1h30m": 90 * time.Minute, "2d": 48 * time.Hour,
	} {
		if got, err := parseDuration("x", in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "10", "0s", "-5m", "1.5d", "0d", "99999d", "d"} {
		if _, err := parseDuration("x", in); exitCodeOf(err) != ExitUsage {
			t.Errorf("%q: %v, want a usage error", in, err)
		}
	}
}

func TestParsePort(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "8080": 8080, "65535": 65535} {
		if got, err := parsePort(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"0", "65536", "-1", "http", "80.5", "", " 80"} {
		if _, err := parsePort(in); exitCodeOf(err) != ExitUsage {
			t.Errorf("%q: %v, want a usage error", in, err)
		}
	}
}

func TestParsePairs(t *testing.T) {
	got, err := parsePairs("env", []string{"A=1", "B=x=y", "C="})
	if err != nil || got["A"] != "1" || got["B"] != "x=y" || got["C"] != "" || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"A", "=1"} {
		if _, err := parsePairs("env", []string{bad}); exitCodeOf(err) != ExitUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestOneLine(t *testing.T) {
	in := "unknown command \"sus\" for \"sandpod\"\n\nDid you mean this?\n\tls\n\tsuspend\n"
	if got := oneLine(in); got != `unknown command "sus" for "sandpod" (did you mean ls or suspend?)` {
		t.Fatalf("%q", got)
	}
	if got := oneLine("unknown flag: --x\n"); got != "unknown flag: --x" {
		t.Fatalf("%q", got)
	}
}
