package lifecycle

import (
	"strings"
	"testing"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestMayReach(t *testing.T) {
	member := CallTarget{Name: "python-x7k2mq", Template: "python", Pool: "python"}
	claimed := CallTarget{Name: "python-x7k2mq", Template: "python"}
	cases := []struct {
		call   SandboxCall
		target CallTarget
		want   bool
	}{
		{CallGet, member, true},
		{CallAgent, member, false},
		{CallSuspend, member, false},
		{CallResume, member, false},
		{CallExtend, member, false},
		{CallDelete, member, true},
		{CallPause, member, false},

		{CallGet, claimed, true},
		{CallAgent, claimed, true},
		{CallSuspend, claimed, true},
		{CallResume, claimed, true},
		{CallExtend, claimed, true},
		{CallDelete, claimed, true},
		{CallPause, claimed, true},
	}
	for _, tc := range cases {
		name := tc.call.String() + "/claimed"
		if tc.target.Pool != "" {
			name = tc.call.String() + "/member"
		}
		t.Run(name, func(t *testing.T) {
			ok, why := MayReach(tc.call, tc.target)
			if ok != tc.want {
				t.Fatalf("MayReach(%s, %+v) = %v, want %v", tc.call, tc.target, ok, tc.want)
			}
			if ok && why != "" {
				t.Errorf("allowed, yet a reason: %q", why)
			}
			if !ok {
				for _, part := range []string{`sandbox "python-x7k2mq"`, `unclaimed member of warm pool "python"`, `ClaimSandbox with template "python"`} {
					if !strings.Contains(why, part) {
						t.Errorf("reason %q does not say %q", why, part)
					}
				}
			}
		})
	}
}

func TestReplaceMember(t *testing.T) {
	cases := map[v1alpha1.SandboxPhase]bool{
		v1alpha1.SandboxPending:     false, // starting: it will serve
		v1alpha1.SandboxRunning:     false,
		v1alpha1.SandboxFailed:      true, // start failed, or it crashed
		v1alpha1.SandboxSuspended:   true, // idle policy, operator, old state
		v1alpha1.SandboxExpired:     true,
		v1alpha1.SandboxTerminating: false, // already going
		"":                          false, // no status yet: pending
	}
	for phase, want := range cases {
		if got := ReplaceMember(phase); got != want {
			t.Errorf("ReplaceMember(%q) = %v, want %v", phase, got, want)
		}
	}
}

// A suspended member is replaced like a failed one: deleted, and a new one
// made in the same pass, so the pool stays at its size.
func TestPlanPoolReplacesSuspendedMembers(t *testing.T) {
	members := []PoolMember{
		member("ok", true, "h", 0),
		{Name: "suspended", Failed: ReplaceMember(v1alpha1.SandboxSuspended), TemplateHash: "h"},
		{Name: "stale-suspended", Failed: ReplaceMember(v1alpha1.SandboxSuspended), TemplateHash: "old"},
	}
	got := PlanPool(3, members, "h", 0, 0)
	if got.Create != 2 || len(got.Delete) != 2 {
		t.Fatalf("PlanPool = %+v, want 2 created and both suspended members deleted", got)
	}
}
