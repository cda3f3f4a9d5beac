package engine

import (
	"slices"
	"testing"
)

func TestAllocateRange(t *testing.T) {
	a := rangeOwner{StateDir: "/a", Namespace: "default", Name: "x", UID: "u1"}
	b := rangeOwner{StateDir: "/b", Namespace: "default", Name: "x", UID: "u2"}
	gone := func(dir string) bool { return dir == "/deleted" }
	const r0, r1, r2 = firstIDBase, firstIDBase + idRangeSize, firstIDBase + 2*idRangeSize
	for name, c := range map[string]struct {
		table rangeTable
		owner rangeOwner
		local map[uint32]bool
		want  uint32
	}{
		"empty registry: the first range":             {rangeTable{}, a, nil, r0},
		"another engine's sandbox holds the first":    {rangeTable{r0: b}, a, nil, r1},
		"the owner's own range again (after a crash)": {rangeTable{r0: b, r2: a}, a, nil, r2},
		"same name, another engine: another range":    {rangeTable{r0: a}, b, nil, r1},
		"a deleted state directory's range is free":   {rangeTable{r0: {StateDir: "/deleted", UID: "u9"}}, a, nil, r0},
		"this engine's own bases are never given out": {rangeTable{}, a, map[uint32]bool{r0: true}, r1},
	} {
		out, got, err := allocateRange(c.table, c.owner, c.local, gone)
		if err != nil || got != c.want || !out[got].same(c.owner) {
			t.Errorf("%s: base %d (err %v), registry %v; want %d held by the owner", name, got, err, out, c.want)
		}
		for base, o := range out {
			if o.StateDir == "/deleted" {
				t.Errorf("%s: stale entry %d kept", name, base)
			}
		}
	}
}

func TestReleaseRange(t *testing.T) {
	a := rangeOwner{StateDir: "/a", Name: "x", UID: "u1"}
	again := rangeOwner{StateDir: "/a", Name: "x", UID: "u3"} // deleted and made again: another sandbox
	out := releaseRange(rangeTable{firstIDBase: a, firstIDBase + idRangeSize: again}, a)
	if len(out) != 1 || !out[firstIDBase+idRangeSize].same(again) {
		t.Errorf("after release: %v", out)
	}
}

func TestReconcileRanges(t *testing.T) {
	mine := func(uid string) rangeOwner { return rangeOwner{StateDir: "/a", Name: uid, UID: uid} }
	other := rangeOwner{StateDir: "/b", Name: "o", UID: "o1"}
	gone := func(dir string) bool { return dir == "/deleted" }
	const r0, r1, r2 = firstIDBase, firstIDBase + idRangeSize, firstIDBase + 2*idRangeSize
	for name, c := range map[string]struct {
		table    rangeTable
		claims   []rangeClaim
		want     rangeTable
		wantLost []string
	}{
		"a store older than the registry is entered": {
			rangeTable{}, []rangeClaim{{mine("u1"), r0}, {mine("u2"), 0}},
			rangeTable{r0: mine("u1")}, nil,
		},
		"an entry of a sandbox deleted before its release is dropped": {
			rangeTable{r0: mine("u1"), r1: mine("gone"), r2: other}, []rangeClaim{{mine("u1"), r0}},
			rangeTable{r0: mine("u1"), r2: other}, nil,
		},
		"a range another engine holds is lost": {
			rangeTable{r0: other}, []rangeClaim{{mine("u1"), r0}, {mine("u2"), r1}},
			rangeTable{r0: other, r1: mine("u2")}, []string{"u1"},
		},
		"two of this store on one range: the first keeps it": {
			rangeTable{}, []rangeClaim{{mine("u2"), r0}, {mine("u1"), r0}},
			rangeTable{r0: mine("u1")}, []string{"u2"},
		},
		"stale entries go": {
			rangeTable{r0: {StateDir: "/deleted", UID: "x"}}, []rangeClaim{{mine("u1"), r0}},
			rangeTable{r0: mine("u1")}, nil,
		},
	} {
		got, lost := reconcileRanges(c.table, "/a", c.claims, gone)
		if len(got) != len(c.want) || !slices.Equal(lost, c.wantLost) {
			t.Errorf("%s: registry %v lost %v; want %v lost %v", name, got, lost, c.want, c.wantLost)
			continue
		}
		for base, o := range c.want {
			if got[base] != o {
				t.Errorf("%s: range %d held by %v, want %v", name, base, got[base], o)
			}
		}
	}
}
