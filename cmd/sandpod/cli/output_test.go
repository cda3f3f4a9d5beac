package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func TestShortDurations(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {45 * time.Second, "45s"}, {119 * time.Second, "119s"}, {2 * time.Minute, "2m"},
		{119 * time.Minute, "119m"}, {2 * time.Hour, "2h"}, {47 * time.Hour, "47h"}, {72 * time.Hour, "3d"},
	} {
		if got := age(now.Add(-tc.d), now); got != tc.want {
			t.Errorf("age %v: %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := until(now.Add(30*time.Minute), now); got != "in 30m" {
		t.Errorf("until: %q", got)
	}
	if got := until(now.Add(-time.Second), now); got != "due" {
		t.Errorf("until, passed: %q", got)
	}
	if age(time.Time{}, now) != "-" || until(time.Time{}, now) != "-" {
		t.Error("zero times are not -")
	}
}

// TestSandboxJSONFieldNames: -o json is for scripts; its names must not
// drift.
func TestSandboxJSONFieldNames(t *testing.T) {
	now := time.Now()
	warm := true
	v := viewOf(sandpod.Info{
		Name: "sb", Namespace: "default", UID: "u", Template: "python", Pool: "python",
		Labels: map[string]string{"a": "b"}, Phase: sandpod.PhaseRunning, Message: "m",
		Conditions: []sandpod.Condition{{Type: "Ready", Status: "True", Reason: "Running", LastTransitionTime: now}},
		CreateTime: now, ShutdownTime: now, ShutdownPolicy: sandpod.ShutdownDelete, LastActivityTime: now,
		IdleTimeout: 15 * time.Minute, Claimed: true, EnvKeys: []string{"K"}, ServiceFQDN: "sb.svc", AgentRestarts: 1,
	})
	v.Warm = &warm
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := "agentRestarts claimed conditions createTime envKeys idleTimeout labels lastActivityTime message name namespace phase pool serviceFqdn shutdownPolicy shutdownTime template uid warm"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("JSON fields:\n got %s\nwant %s", got, want)
	}
	if m["phase"] != "Running" || m["idleTimeout"] != "900s" || m["shutdownPolicy"] != "Delete" {
		t.Fatalf("values: %v", m)
	}
}

func TestStreamTableKeepsColumnsAligned(t *testing.T) {
	var b strings.Builder
	st := newStreamTable(&b, []int{4, 4}, "A", "B", "MSG")
	st.row("x", "y", "hello world")
	st.row("longer-name", "y", "m")
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if lines[0] != "A      B      MSG" || lines[1] != "x      y      hello world" || lines[2] != "longer-name   y      m" {
		t.Fatalf("%q", lines)
	}
}

func TestFilter(t *testing.T) {
	f, err := newFilter("running,Suspended", "", "python")
	if err != nil {
		t.Fatal(err)
	}
	claimed := sandpod.Info{Phase: sandpod.PhaseRunning, Template: "python", Claimed: true}
	if !f.keep(claimed, false) {
		t.Error("a running python sandbox is filtered out")
	}
	if f.keep(sandpod.Info{Phase: sandpod.PhaseFailed, Template: "python", Claimed: true}, false) {
		t.Error("a failed one is kept")
	}
	if f.keep(sandpod.Info{Phase: sandpod.PhaseRunning, Template: "go", Claimed: true}, false) {
		t.Error("another template is kept")
	}
	if f.keep(sandpod.Info{Phase: sandpod.PhaseRunning, Template: "python"}, false) || !f.keep(sandpod.Info{Phase: sandpod.PhaseRunning, Template: "python"}, true) {
		t.Error("pool members show only with --all")
	}
	byPool, _ := newFilter("", "p", "")
	if !byPool.keep(sandpod.Info{Phase: sandpod.PhaseRunning, Pool: "p"}, false) {
		t.Error("--pool hides its unclaimed members")
	}
	if _, err := newFilter("runing", "", ""); exitCodeOf(err) != ExitUsage {
		t.Errorf("a misspelt phase: %v", err)
	}
}
