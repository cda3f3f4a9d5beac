package uninstall

import "testing"

func TestDecide(t *testing.T) {
	tests := []struct {
		mode      Mode
		sandboxes int
		want      Action
	}{
		{ModeRefuse, 0, Proceed},
		{ModeRefuse, 1, Refuse},
		{ModeRefuse, 250, Refuse},
		{ModeKeep, 0, Proceed},
		{ModeKeep, 3, Keep},
		{ModeDelete, 0, Delete},
		{ModeDelete, 3, Delete},
		{Mode(""), 0, Proceed},
		{Mode(""), 1, Refuse}, // unknown: refuse, never delete
		{Mode("purge"), 2, Refuse},
	}
	for _, tt := range tests {
		if got := Decide(tt.mode, tt.sandboxes); got != tt.want {
			t.Errorf("Decide(%q, %d) = %v, want %v", tt.mode, tt.sandboxes, got, tt.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"refuse", "keep", "delete"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "Keep", "drop", "delete "} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q): no error", s)
		}
	}
}
