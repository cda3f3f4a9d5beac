package engine

// Running counts the sandboxes whose process trees are alive: claimed ones
// and unclaimed warm pool members. Called after Close, it says what keeps
// running once serve is gone (sandboxes outlive serve by design: the next
// serve on the state directory takes them over).
func (e *Engine) Running() (claimed, poolMembers int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sb := range e.sandboxes {
		if sb.proc == nil {
			continue
		}
		select {
		case <-sb.proc.done:
			continue
		default:
		}
		if sb.rec.Claimed {
			claimed++
		} else {
			poolMembers++
		}
	}
	return claimed, poolMembers
}
