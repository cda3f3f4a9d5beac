package lifecycle

import (
	"slices"
	"testing"
	"time"
)

func member(name string, ready bool, hash string, age time.Duration) PoolMember {
	return PoolMember{Name: name, Ready: ready, TemplateHash: hash, Created: t0.Add(-age)}
}

func TestPlanPool(t *testing.T) {
	cases := map[string]struct {
		desired, inFlight, maxBatch int
		members                     []PoolMember
		wantCreate                  int
		wantDelete                  []string
	}{
		"empty pool fills": {desired: 3, wantCreate: 3},
		"batch caps the refill": {
			desired: 10, maxBatch: 4, wantCreate: 4,
		},
		"in-flight creations count (expectations)": {
			desired: 3, inFlight: 2, members: []PoolMember{member("a", false, "h", 0)},
			wantCreate: 0,
		},
		"full pool does nothing": {
			desired: 2, members: []PoolMember{member("a", true, "h", 2), member("b", false, "h", 1)},
		},
		"scale down sheds unready first, then newest": {
			desired: 1,
			members: []PoolMember{
				member("old-ready", true, "h", 3*time.Minute),
				member("new-ready", true, "h", time.Minute),
				member("unready", false, "h", 2*time.Minute),
			},
			wantDelete: []string{"unready", "new-ready"},
		},
		"failed members are replaced": {
			desired:    2,
			members:    []PoolMember{member("ok", true, "h", 0), {Name: "bad", Failed: true, TemplateHash: "h"}},
			wantCreate: 1, wantDelete: []string{"bad"},
		},
		"roll: stale ready members stay until replacements are ready": {
			desired: 2,
			members: []PoolMember{
				member("stale-1", true, "old", 2*time.Minute),
				member("stale-2", true, "old", time.Minute),
			},
			wantCreate: 2,
		},
		"roll: one replacement ready retires the oldest stale member": {
			desired: 2,
			members: []PoolMember{
				member("stale-1", true, "old", 3*time.Minute),
				member("stale-2", true, "old", 2*time.Minute),
				member("new-1", true, "h", time.Minute),
				member("new-2", false, "h", 0),
			},
			wantDelete: []string{"stale-1"},
		},
		"roll: unready stale members go at once": {
			desired:    1,
			members:    []PoolMember{member("stale", false, "old", 0)},
			wantCreate: 1, wantDelete: []string{"stale"},
		},
		"scale to zero deletes everything": {
			desired:    0,
			members:    []PoolMember{member("a", true, "h", 0), member("s", true, "old", 0)},
			wantDelete: []string{"a", "s"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PlanPool(tc.desired, tc.members, "h", tc.inFlight, tc.maxBatch)
			if got.Create != tc.wantCreate {
				t.Errorf("Create = %d, want %d", got.Create, tc.wantCreate)
			}
			if !slices.Equal(got.Delete, tc.wantDelete) {
				t.Errorf("Delete = %v, want %v", got.Delete, tc.wantDelete)
			}
		})
	}
}

func TestClaimCandidates(t *testing.T) {
	members := []PoolMember{
		member("unready", false, "h", 5*time.Minute),
		member("stale-old", true, "old", 4*time.Minute),
		member("current-new", true, "h", time.Minute),
		member("current-old", true, "h", 3*time.Minute),
		{Name: "failed", Ready: true, Failed: true, TemplateHash: "h"},
	}
	want := []string{"current-old", "current-new", "stale-old"}
	if got := ClaimCandidates(members, "h"); !slices.Equal(got, want) {
		t.Errorf("ClaimCandidates = %v, want %v", got, want)
	}
	if got := ClaimCandidates(nil, "h"); len(got) != 0 {
		t.Errorf("ClaimCandidates(nil) = %v, want none", got)
	}
}

func TestTemplateHashIsStableAndSensitive(t *testing.T) {
	type spec struct{ Image string }
	a, b := TemplateHash(spec{"x"}), TemplateHash(spec{"x"})
	if a != b || len(a) != 16 {
		t.Fatalf("hash not stable: %q %q", a, b)
	}
	if a == TemplateHash(spec{"y"}) {
		t.Fatalf("hash ignores a spec change")
	}
}
