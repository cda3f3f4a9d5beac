package engine

import "sort"

// The host-wide registry of id ranges: every engine on a host (each with a
// state directory of its own) takes its sandboxes' ranges from one
// registry, so no two sandboxes of the host share a host id, whichever
// engine runs them. A range stays taken while its sandbox exists, running
// or not: a suspended sandbox's files keep its ids.

// rangeOwner is the sandbox that holds a range: its engine's state
// directory, its name and its record's UID (a sandbox deleted and made
// again under the same name is another owner).
type rangeOwner struct {
	StateDir  string `json:"stateDir"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

func (o rangeOwner) same(p rangeOwner) bool { return o.StateDir == p.StateDir && o.UID == p.UID }

// rangeTable is the registry's content: range base -> owner.
type rangeTable map[uint32]rangeOwner

// withoutStale drops the ranges of engines whose state directory is gone
// (removed with its sandboxes' files: nothing of theirs has those ids).
func (t rangeTable) withoutStale(gone func(stateDir string) bool) rangeTable {
	out := rangeTable{}
	for base, o := range t {
		if !gone(o.StateDir) {
			out[base] = o
		}
	}
	return out
}

// allocateRange gives owner a range: the one it holds already, or the
// lowest free one (free in the registry and not in local, the bases this
// engine's own sandboxes use).
func allocateRange(t rangeTable, owner rangeOwner, local map[uint32]bool, gone func(string) bool) (rangeTable, uint32, error) {
	for base, o := range t {
		if o.same(owner) {
			return t, base, nil
		}
	}
	out := t.withoutStale(gone)
	used := map[uint32]bool{}
	for base := range out {
		used[base] = true
	}
	for base := range local {
		used[base] = true
	}
	base, err := nextIDBase(used)
	if err != nil {
		return t, 0, err
	}
	out[base] = owner
	return out, base, nil
}

// releaseRange gives back owner's range, if it holds one.
func releaseRange(t rangeTable, owner rangeOwner) rangeTable {
	out := rangeTable{}
	for base, o := range t {
		if !o.same(owner) {
			out[base] = o
		}
	}
	return out
}

// rangeClaim is a sandbox of an engine's store and the range on its record.
type rangeClaim struct {
	Owner rangeOwner
	Base  uint32
}

// reconcileRanges makes the registry agree with one engine's store at
// start: the engine's entries that no record (or another range) holds any
// more are dropped (a delete the engine did not get to release), each
// record's range is entered (a store older than the registry), and the
// records whose range another owner holds are returned as lost (their
// UIDs): such a sandbox must take another range before it runs again.
func reconcileRanges(t rangeTable, stateDir string, claims []rangeClaim, gone func(string) bool) (rangeTable, []string) {
	byUID := map[string]uint32{}
	for _, c := range claims {
		byUID[c.Owner.UID] = c.Base
	}
	out := rangeTable{}
	for base, o := range t.withoutStale(gone) {
		if o.StateDir == stateDir {
			if b, ok := byUID[o.UID]; !ok || b != base {
				continue
			}
		}
		out[base] = o
	}
	sorted := append([]rangeClaim(nil), claims...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Owner.UID < sorted[j].Owner.UID })
	var lost []string
	for _, c := range sorted {
		if c.Base == 0 {
			continue
		}
		o, ok := out[c.Base]
		switch {
		case !ok:
			out[c.Base] = c.Owner
		case !o.same(c.Owner):
			lost = append(lost, c.Owner.UID)
		}
	}
	return out, lost
}
