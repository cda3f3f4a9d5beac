package engine

// The engine's side of the host-wide id range registry (idregistry.go).

func (e *Engine) rangeOwner(r *record) rangeOwner {
	return rangeOwner{StateDir: e.cfg.StateDir, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

// allocateIDRange takes a range for r from the registry (local: the bases
// of this engine's sandboxes, never given out).
func (e *Engine) allocateIDRange(r *record, local map[uint32]bool) (uint32, error) {
	var base uint32
	err := e.ids.update(func(t rangeTable) (rangeTable, error) {
		out, b, err := allocateRange(t, e.rangeOwner(r), local, stateDirGone)
		base = b
		return out, err
	})
	return base, err
}

// releaseIDRange gives a deleted sandbox's range back. A failure leaves
// the entry to the next start of this engine (reconcileIDRanges).
func (e *Engine) releaseIDRange(r *record) {
	if err := e.ids.update(func(t rangeTable) (rangeTable, error) {
		return releaseRange(t, e.rangeOwner(r)), nil
	}); err != nil {
		e.log.Warn("release the id range of a deleted sandbox", "sandbox", r.key(), "err", err)
	}
}

// reconcileIDRanges enters this engine's sandboxes' ranges in the registry
// at start and drops what it holds for sandboxes that are gone. A sandbox
// whose range another engine's sandbox holds (both chose it before the
// registry existed) takes a new one at its next start if it is not
// running; a running one cannot change ids under its processes: it is
// logged, and keeps the range until it is deleted.
func (e *Engine) reconcileIDRanges() {
	e.mu.Lock()
	var claims []rangeClaim
	for _, sb := range e.sandboxes {
		claims = append(claims, rangeClaim{Owner: e.rangeOwner(&sb.rec), Base: sb.rec.IDBase})
	}
	e.mu.Unlock()
	var lost []string
	err := e.ids.update(func(t rangeTable) (rangeTable, error) {
		out, l := reconcileRanges(t, e.cfg.StateDir, claims, stateDirGone)
		lost = l
		return out, nil
	})
	if err != nil {
		e.log.Error("id range registry: this engine's ranges are not entered; new sandboxes still take theirs from it", "err", err)
		return
	}
	lostSet := map[string]bool{}
	for _, uid := range lost {
		lostSet[uid] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sb := range e.sandboxes {
		if !lostSet[sb.rec.UID] {
			continue
		}
		if sb.proc != nil {
			e.log.Warn("a running sandbox shares its host id range with another engine's sandbox (both chosen before the host-wide registry); delete one of them to end it",
				"sandbox", sb.key(), "idBase", sb.rec.IDBase)
			continue
		}
		e.log.Info("sandbox takes a new host id range at its next start: another engine's sandbox holds its old one", "sandbox", sb.key(), "idBase", sb.rec.IDBase)
		e.moveRange[sb.rec.UID] = true
	}
}
