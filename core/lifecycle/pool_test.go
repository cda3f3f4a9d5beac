package lifecycle

import (
	"fmt"
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

func TestBestCandidate(t *testing.T) {
	pool := []PoolMember{
		member("unready", false, "h", 5*time.Minute),
		member("stale-old", true, "old", 4*time.Minute),
		member("current-new", true, "h", time.Minute),
		member("current-old", true, "h", 3*time.Minute),
		member("current-old-b", true, "h", 3*time.Minute), // same age: by name
		{Name: "failed", Ready: true, Failed: true, TemplateHash: "h", Created: time.Unix(0, 0)},
	}
	skipping := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	for _, tc := range []struct {
		name    string
		members []PoolMember
		skip    func(string) bool
		want    string // "" = none
	}{
		{"oldest current member", pool, nil, "current-old"},
		{"same age: by name", pool, skipping("current-old"), "current-old-b"},
		{"then newer current ones", pool, skipping("current-old", "current-old-b"), "current-new"},
		{"stale only when no current one is left", pool, skipping("current-old", "current-old-b", "current-new"), "stale-old"},
		{"every ready member skipped", pool, skipping("current-old", "current-old-b", "current-new", "stale-old"), ""},
		{"unready and failed members never", pool[:1], nil, ""},
		{"empty pool", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := BestCandidate(slices.Values(tc.members), "h", tc.skip)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("BestCandidate = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestBestCandidateIsClaimCandidatesFirst: in any order of the members, the
// one-pass pick is the head of the sorted candidates, skips included.
func TestBestCandidateIsClaimCandidatesFirst(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	var members []PoolMember
	for i := range 40 {
		members = append(members, PoolMember{
			Name: fmt.Sprintf("m%02d", (i*7)%40), Ready: i%5 != 0, Failed: i%11 == 0,
			TemplateHash: []string{"h", "old"}[i%3%2], Created: base.Add(time.Duration(i%6) * time.Second),
		})
	}
	want := ClaimCandidates(members, "h")
	for k := range want {
		skipped := want[:k]
		got, ok := BestCandidate(slices.Values(members), "h", func(n string) bool { return slices.Contains(skipped, n) })
		if !ok || got != want[k] {
			t.Fatalf("with the first %d candidates skipped: BestCandidate = %q, %v; want %q", k, got, ok, want[k])
		}
	}
	slices.Reverse(members)
	if got, _ := BestCandidate(slices.Values(members), "h", nil); got != want[0] {
		t.Errorf("reversed input: BestCandidate = %q, want %q", got, want[0])
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
