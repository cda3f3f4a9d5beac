package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

func nsOr(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// Request is a create's, claim's or fork's ask.
type Request struct {
	Namespace, Template, Name string
	Labels, Env               map[string]string
	TTL                       time.Duration
	ShutdownTime              *time.Time
	ShutdownPolicy            v1alpha1.ShutdownPolicy
	RequestID                 string
	// Snapshot: the workspace starts from it (fork.go).
	Snapshot string
	// RestartOnFailure: nil when unset.
	RestartOnFailure *bool
	// Lease: nil for the template's default.
	Lease *time.Duration
}

func (r Request) params(op string) newParams {
	return newParams{
		namespace: nsOr(r.Namespace), template: r.Template, name: r.Name, labels: r.Labels, env: r.Env,
		ttl: r.TTL, shutdown: r.ShutdownTime, policy: r.ShutdownPolicy, requestID: r.RequestID, op: op,
		snapshot: r.Snapshot, restart: r.RestartOnFailure, lease: r.Lease,
	}
}

// Create starts a sandbox cold from a template, and waits until it runs
// unless noWait.
func (e *Engine) Create(ctx context.Context, r Request, noWait bool) (Sandbox, error) {
	sb, existed, err := e.newSandbox(r.params("create"))
	if err != nil {
		return Sandbox{}, err
	}
	if !existed {
		e.startAsync(sb)
	}
	if noWait {
		return e.snapshot(sb), nil
	}
	return e.waitReady(ctx, sb)
}

// Claim adopts a ready warm pool member of the template, or starts a
// sandbox cold when none is ready, and waits until it runs. warm says
// which.
//
// The outline is bridge/kube's ClaimSandbox's: request id, source
// (snapshot, template), quota, warm take, cold start. It is not shared
// code because the two differ where their stores do: here each step runs
// under e.mu with one store write, so adoptWarm looks for a ready member
// before the quota and counts the claim only when it takes one (nothing
// to undo), and newSandbox checks request id, source and quota again in
// its own lock section; bridge/kube reads a cache and writes to the API
// server, so it locks the request id, admits before the take and releases
// the quota when the take or the create fails, and looks up a claim whose
// answer was lost (uncertainClaim).
func (e *Engine) Claim(ctx context.Context, r Request) (Sandbox, bool, error) {
	p := r.params("claim")
	if sb, warm, ok, err := e.adoptWarm(p); err != nil {
		return Sandbox{}, false, err
	} else if ok {
		got, err := e.waitReady(ctx, sb)
		return got, warm, err
	}
	sb, existed, err := e.newSandbox(p)
	if err != nil {
		return Sandbox{}, false, err
	}
	if !existed {
		e.startAsync(sb)
	}
	got, err := e.waitReady(ctx, sb)
	return got, false, err
}

type newParams struct {
	namespace, template, name string
	labels, env               map[string]string
	ttl                       time.Duration
	shutdown                  *time.Time
	policy                    v1alpha1.ShutdownPolicy
	requestID, op             string
	pool                      string
	// snapshot: the workspace starts from it (fork.go).
	snapshot string
	// restart: the request's restart_on_failure (nil when unset).
	restart *bool
	// lease: the request's lease (nil: the template's default).
	lease *time.Duration
}

// quotaCounted: requests of these ops count against SandboxQuotas here (a
// fork checks all its sandboxes at once, fork.go; pool members never count).
func quotaCounted(op string) bool { return op == "claim" || op == "create" }

// byRequest returns the sandbox an earlier request with the same id made.
// Callers hold e.mu.
func (e *Engine) byRequest(p newParams) (*sandbox, bool, error) {
	if p.requestID == "" {
		return nil, false, nil
	}
	ent, ok := e.requests[p.namespace+"/"+p.requestID]
	if !ok {
		return nil, false, nil
	}
	sb := e.sandboxes[p.namespace+"/"+ent.Sandbox]
	if sb == nil || sb.rec.UID != ent.UID {
		// Its sandbox is gone (an entry a store kept from before ids
		// were forgotten with their sandbox): the id is free.
		return nil, false, nil
	}
	if ent.Op != p.op {
		return nil, true, failf(ErrInvalid, errinfo.ReasonRequestIDReused, "request_id %q was already used by a %s request", p.requestID, ent.Op)
	}
	if sb.rec.Deleting {
		return nil, true, failf(ErrNotFound, errinfo.ReasonRequestIDSandboxDeleted,
			"request_id %q made sandbox %q, which is being deleted; once it is gone the id makes a new one", p.requestID, ent.Sandbox)
	}
	return sb, true, nil
}

// requestOfLocked is the key of the create or claim request id entry that
// names rec, or "": forgotten with the sandbox (finishDelete). Forks and
// snapshots keep theirs. Callers hold e.mu.
func (e *Engine) requestOfLocked(rec *record) string {
	if rec.RequestID == "" {
		return ""
	}
	key := rec.Namespace + "/" + rec.RequestID
	if ent, ok := e.requests[key]; ok && ent.UID == rec.UID && ent.Sandbox == rec.Name && (ent.Op == "create" || ent.Op == "claim") {
		return key
	}
	return ""
}

// adoptWarm hands out a ready pool member in one store write.
func (e *Engine) adoptWarm(p newParams) (sb *sandbox, warm, ok bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev, found, err := e.byRequest(p); found {
		if err != nil {
			return nil, false, false, err
		}
		return prev, prev.rec.Pool != "", true, nil
	}
	if p.snapshot != "" {
		if _, err := e.snapForLocked(&p); err != nil {
			return nil, false, false, err
		}
	}
	spec, ok := e.templates[p.namespace+"/"+p.template]
	if !ok {
		return nil, false, false, e.noTemplate(p.namespace, p.template)
	}
	var members []lifecycle.PoolMember
	for _, s := range e.sandboxes {
		r := &s.rec
		if r.Namespace != p.namespace || r.Pool == "" || r.Claimed || r.Deleting || r.Spec.Template != p.template || r.Snapshot != p.snapshot {
			continue
		}
		members = append(members, poolMember(s))
	}
	cands := lifecycle.ClaimCandidates(members, spec.Hash)
	if len(cands) == 0 {
		return nil, false, false, nil
	}
	if quotaCounted(p.op) {
		if err := e.admitLocked(p.namespace, p.template, 1, true); err != nil {
			return nil, false, false, err
		}
	}
	sb = e.sandboxes[p.namespace+"/"+cands[0]]
	now := e.now()
	next := sb.rec
	next.Claimed = true
	next.Labels = mergeMaps(next.Labels, p.labels)
	next.Env = copyMap(p.env)
	next.ShutdownTime = lifecycle.ShutdownTime(now, p.shutdown, p.ttl, sb.rec.Spec.DefaultTTL.Duration)
	next.ShutdownPolicy = lifecycle.EffectivePolicy(p.policy, sb.rec.Spec.ShutdownPolicy)
	next.RequestID = p.requestID
	next.RestartOnFailure = p.restart
	next.LastActivity = now
	if p.op != "fork" {
		setLease(&next, leaseFor(p.lease, sb.rec.Spec), now)
	}
	var ent *requestEntry
	if p.requestID != "" {
		ent = &requestEntry{Op: p.op, Sandbox: next.Name, UID: next.UID}
	}
	if err := e.store.put(&next, p.namespace+"/"+p.requestID, ent); err != nil {
		return nil, false, false, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save claim: %v", err)
	}
	sb.rec = next
	if ent != nil {
		e.requests[p.namespace+"/"+p.requestID] = *ent
	}
	if pl := e.pools[p.namespace+"/"+sb.rec.Pool]; pl != nil {
		pl.lastClaim = now
	}
	go e.publish(sb)
	e.poke() // refill the pool
	return sb, true, true, nil
}

// newSandbox records a new sandbox (or finds the one its request id made).
func (e *Engine) newSandbox(p newParams) (*sandbox, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev, found, err := e.byRequest(p); found {
		return prev, true, err
	}
	var snapUID string
	if p.snapshot != "" {
		s, err := e.snapForLocked(&p)
		if err != nil {
			return nil, false, err
		}
		snapUID = s.UID
	}
	spec, ok := e.templates[p.namespace+"/"+p.template]
	if !ok {
		return nil, false, e.noTemplate(p.namespace, p.template)
	}
	if quotaCounted(p.op) {
		if err := e.admitLocked(p.namespace, p.template, 1, true); err != nil {
			return nil, false, err
		}
	}
	name := p.name
	if name == "" {
		name = e.generateName(p.namespace, p.template)
	} else if _, exists := e.sandboxes[p.namespace+"/"+name]; exists {
		return nil, false, failf(ErrExists, errinfo.ReasonSandboxExists, "sandbox %q already exists in namespace %q", name, p.namespace)
	} else if e.orphans[p.namespace+"/"+name] {
		return nil, false, failf(ErrExists, errinfo.ReasonSandboxExists, "sandbox %q: its directory %s exists without a record (the state was restored from an older backup); to use the name again, move it aside and restart serve",
			name, filepath.Join(e.cfg.StateDir, "sandboxes", p.namespace, name))
	}
	rec := e.newRecordLocked(p, spec, name)
	rec.SnapshotUID = snapUID
	var ent *requestEntry
	if p.requestID != "" {
		ent = &requestEntry{Op: p.op, Sandbox: name, UID: rec.UID}
	}
	if err := e.store.put(&rec, p.namespace+"/"+p.requestID, ent); err != nil {
		return nil, false, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save sandbox: %v", err)
	}
	sb := makeSandbox(rec)
	e.sandboxes[rec.key()] = sb
	if ent != nil {
		e.requests[p.namespace+"/"+p.requestID] = *ent
	}
	go e.hub.publish(event{typ: Added, sb: sb.view()})
	return sb, false, nil
}

// newRecordLocked is the record of a new sandbox named name.
func (e *Engine) newRecordLocked(p newParams, spec runSpec, name string) record {
	now := e.now()
	rec := record{
		Namespace: p.namespace, Name: name, UID: newUID(), Pool: p.pool, Claimed: p.pool == "",
		Labels: copyMap(p.labels), Env: copyMap(p.env), Spec: spec, Secret: newSecret(), RequestID: p.requestID,
		Mode: v1alpha1.OperatingModeRunning, Created: now, LastActivity: now,
		ShutdownTime:   lifecycle.ShutdownTime(now, p.shutdown, p.ttl, spec.DefaultTTL.Duration),
		ShutdownPolicy: lifecycle.EffectivePolicy(p.policy, spec.ShutdownPolicy),
		Snapshot:       p.snapshot,
	}
	rec.RestartOnFailure = p.restart
	if quotaCounted(p.op) {
		setLease(&rec, leaseFor(p.lease, spec), now)
	}
	if p.pool != "" {
		rec.ShutdownTime = nil // pool members wait without a clock; a claim sets it
	}
	return rec
}

func (e *Engine) noTemplate(ns, name string) error {
	return failf(ErrNotFound, errinfo.ReasonTemplateNotFound, "template %q not found in namespace %q (ListTemplates shows what is defined)", name, ns)
}

const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (e *Engine) generateName(ns, template string) string {
	for {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
		}
		prefix := template
		if len(prefix) > 56 {
			prefix = prefix[:56]
		}
		name := prefix + "-" + string(b)
		if _, taken := e.sandboxes[ns+"/"+name]; !taken && !e.orphans[ns+"/"+name] {
			return name
		}
	}
}

// startAsync starts a sandbox independently of the request that asked, so
// a caller who gives up does not leave a half-started sandbox behind.
func (e *Engine) startAsync(sb *sandbox) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.StartTimeout+10*time.Second)
		defer cancel()
		_ = e.run(ctx, sb)
	}()
}

// waitReady waits until sb runs, fails or goes away.
func (e *Engine) waitReady(ctx context.Context, sb *sandbox) (Sandbox, error) {
	if d, ok := ctx.Deadline(); ok {
		// Answer before the caller's deadline, so it gets this answer
		// rather than gRPC's bare one.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, lifecycle.WaitDeadline(time.Now(), d))
		defer cancel()
	}
	sub := e.hub.subscribe()
	defer e.hub.unsubscribe(sub)
	for {
		e.mu.Lock()
		cur := sb.view()
		// A sandbox being deleted is gone too: its phase on the way out
		// must not read as a start that ended.
		gone := e.sandboxes[sb.key()] != sb || sb.rec.Deleting
		e.mu.Unlock()
		switch {
		case gone:
			return Sandbox{}, &NotFoundError{Namespace: cur.Namespace, Name: cur.Name, Msg: fmt.Sprintf("sandbox %q was deleted while starting", cur.Name)}
		case cur.Phase == v1alpha1.SandboxRunning:
			return cur, nil
		case cur.Phase == v1alpha1.SandboxFailed:
			return Sandbox{}, failf(ErrUnavailable, errinfo.ReasonSandboxStartFailed, "sandbox %q failed to start: %s", cur.Name, cur.Message)
		case cur.Phase != v1alpha1.SandboxPending:
			return cur, nil // suspended or expired meanwhile: report as is
		}
		select {
		case <-ctx.Done():
			return Sandbox{}, failf(ErrDeadline, errinfo.ReasonSandboxNotReady, "sandbox %q is still starting (it was not deleted: get it by name, or retry with the same request_id)", cur.Name)
		case _, ok := <-sub:
			if !ok { // fell behind; resubscribe
				sub = e.hub.subscribe()
			}
		}
	}
}

func (e *Engine) lookup(ns, name string) (*sandbox, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sb := e.sandboxes[nsOr(ns)+"/"+name]
	if sb == nil || sb.rec.Deleting {
		return nil, sandboxNotFound(nsOr(ns), name)
	}
	return sb, nil
}

// Get returns one sandbox.
func (e *Engine) Get(ns, name string) (Sandbox, error) {
	sb, err := e.lookup(ns, name)
	if err != nil {
		return Sandbox{}, err
	}
	return e.snapshot(sb), nil
}

// List returns matching sandboxes sorted by name.
func (e *Engine) List(ns string, sel labels.Selector, includePool bool) []Sandbox {
	ns = nsOr(ns)
	e.mu.Lock()
	var out []Sandbox
	for _, sb := range e.sandboxes {
		if sb.rec.Deleting {
			continue
		}
		if p := sb.view(); matches(&p, ns, sel, includePool) {
			out = append(out, p)
		}
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Suspend stops the sandbox's processes; its files and name stay.
// Suspend, resume and extend refuse an unclaimed pool member.
func (e *Engine) Suspend(ns, name string) (Sandbox, error) {
	sb, err := e.lookupFor(ns, name, lifecycle.CallSuspend)
	if err != nil {
		return Sandbox{}, err
	}
	e.mu.Lock()
	if sb.rec.Expired {
		e.mu.Unlock()
		return Sandbox{}, failf(ErrConflict, errinfo.ReasonSandboxExpired, "sandbox %q has expired; it is already stopped", name)
	}
	next := sb.rec
	next.Mode = v1alpha1.OperatingModeSuspended
	next.Message = "suspended"
	if err := e.store.put(&next, "", nil); err != nil {
		e.mu.Unlock()
		return Sandbox{}, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	sb.rec = next
	e.mu.Unlock()
	e.stop(sb)
	e.publish(sb)
	return e.snapshot(sb), nil
}

// Resume starts a suspended (or failed) sandbox again, or thaws a
// paused one (pause.go).
func (e *Engine) Resume(ctx context.Context, ns, name string, wait bool) (Sandbox, error) {
	sb, err := e.lookupFor(ns, name, lifecycle.CallResume)
	if err != nil {
		return Sandbox{}, err
	}
	if out, ok, err := e.resumePaused(sb); ok {
		return out, err
	}
	e.mu.Lock()
	if sb.rec.Expired {
		e.mu.Unlock()
		return Sandbox{}, failf(ErrConflict, errinfo.ReasonSandboxExpired, "sandbox %q has expired; extend its shutdown time first", name)
	}
	next := sb.rec
	next.Mode = v1alpha1.OperatingModeRunning
	next.Message = ""
	next.LastActivity = e.now()
	next.RestartDue = time.Time{} // started now, by request
	next.RestartStreak, next.StartFailures = 0, 0
	if err := e.store.put(&next, "", nil); err != nil {
		e.mu.Unlock()
		return Sandbox{}, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	sb.rec = next
	if sb.workload == lifecycle.WorkloadFailed {
		sb.workload = lifecycle.WorkloadAbsent
	}
	e.mu.Unlock()
	e.startAsync(sb)
	if !wait {
		return e.snapshot(sb), nil
	}
	return e.waitReady(ctx, sb)
}

// Extend moves the shutdown time. An expired sandbox becomes
// suspended, ready to resume.
func (e *Engine) Extend(ns, name string, shutdown time.Time) (Sandbox, error) {
	sb, err := e.lookupFor(ns, name, lifecycle.CallExtend)
	if err != nil {
		return Sandbox{}, err
	}
	e.mu.Lock()
	next := sb.rec
	next.ShutdownTime = &shutdown
	if next.Expired {
		next.Expired = false
		next.Mode = v1alpha1.OperatingModeSuspended
	}
	if err := e.store.put(&next, "", nil); err != nil {
		e.mu.Unlock()
		return Sandbox{}, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	sb.rec = next
	e.mu.Unlock()
	e.publish(sb)
	e.poke()
	return e.snapshot(sb), nil
}

// Delete stops a sandbox and removes it with its files. An
// unclaimed pool member may be deleted too: its pool makes a new one.
func (e *Engine) Delete(ns, name string) error {
	sb, err := e.lookupFor(ns, name, lifecycle.CallDelete)
	if err != nil {
		return err
	}
	if err := e.markDeleting(sb); err != nil {
		return err
	}
	if err := e.finishDelete(sb); err != nil {
		return failf(ErrInternal, errinfo.ReasonSandboxDeleteFailed, "delete %q: %v", name, err)
	}
	e.mu.Lock()
	member := sb.callTarget().Pool != ""
	e.mu.Unlock()
	if member {
		e.poke() // its pool makes a new one now, not at the loop's next wake
	}
	return nil
}

func (e *Engine) markDeleting(sb *sandbox) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	next := sb.rec
	next.Deleting = true
	if err := e.store.put(&next, "", nil); err != nil {
		return failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	sb.rec = next
	return nil
}

// Agent returns the agent endpoint of a running sandbox, waiting for a
// starting one and resuming a suspended or paused one when its template
// auto-resumes (a paused one otherwise answers FAILED_PRECONDITION with
// reason SANDBOX_PAUSED).
// Exec and file calls come through here: an unclaimed pool member is
// refused (lifecycle.MayReach), so nothing is planted for its next claimer.
func (e *Engine) Agent(ctx context.Context, ns, name string) (Endpoint, error) {
	sb, err := e.lookupFor(ns, name, lifecycle.CallAgent)
	if err != nil {
		return Endpoint{}, err
	}
	e.mu.Lock()
	phase := sb.phase()
	autoResume := sb.rec.Spec.AutoResume
	msg := sb.rec.message()
	restartDue := sb.rec.RestartDue
	e.mu.Unlock()
	switch phase {
	case v1alpha1.SandboxPaused:
		if !autoResume {
			return Endpoint{}, &PhaseError{Namespace: nsOr(ns), Name: name, Phase: phase}
		}
		if _, err := e.Resume(ctx, ns, name, true); err != nil {
			return Endpoint{}, err
		}
	case v1alpha1.SandboxSuspended:
		if !autoResume {
			return Endpoint{}, &PhaseError{Namespace: nsOr(ns), Name: name, Phase: phase}
		}
		if _, err := e.Resume(ctx, ns, name, true); err != nil {
			return Endpoint{}, err
		}
	case v1alpha1.SandboxExpired, v1alpha1.SandboxFailed:
		return Endpoint{}, &PhaseError{Namespace: nsOr(ns), Name: name, Phase: phase, Detail: msg + " (resume restarts it)"}
	case v1alpha1.SandboxPending:
		if dl, ok := ctx.Deadline(); ok && !restartDue.IsZero() && restartDue.After(dl) {
			// Its agent is down and backing off past this call: say so now
			// rather than at the deadline.
			return Endpoint{}, failf(ErrUnavailable, errinfo.ReasonSandboxNotRunning, "sandbox %q: its agent is not running (%s); the engine restarts it at %s, after this call's deadline: retry then",
				name, msg, restartDue.UTC().Format(time.RFC3339))
		}
		if _, err := e.waitReady(ctx, sb); err != nil {
			if errors.Is(err, ErrDeadline) {
				msg := e.snapshot(sb).Message
				if msg == "" {
					msg = "starting"
				}
				return Endpoint{}, failf(ErrDeadline, errinfo.ReasonSandboxNotReady, "sandbox %q was not running by the call's deadline (%s)", name, msg)
			}
			return Endpoint{}, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if sb.proc == nil {
		return Endpoint{}, failf(ErrUnavailable, errinfo.ReasonSandboxNotRunning, "sandbox %q is not running right now; retry", name)
	}
	sb.active++
	sb.rec.LastActivity = e.now()
	return Endpoint{
		Target: "unix://" + e.socketPath(&sb.rec),
		Secret: sb.rec.Secret,
		Env:    copyMap(sb.rec.Env),
		Done: func() {
			e.mu.Lock()
			sb.active--
			sb.rec.LastActivity = e.now()
			e.mu.Unlock()
		},
	}, nil
}

// Templates returns the templates of a namespace by name, with the limits
// the engine applies.
func (e *Engine) Templates(ns string) []Template {
	ns = nsOr(ns)
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Template
	for key, rs := range e.templates {
		if !strings.HasPrefix(key, ns+"/") {
			continue
		}
		t := Template{
			Name: rs.Template, Namespace: ns, Image: rs.Image, RuntimeClass: rs.RuntimeClass,
			ShutdownPolicy: lifecycle.EffectivePolicy(rs.ShutdownPolicy, ""), AutoResume: rs.AutoResume,
			IdleAction:      rs.IdleAction,
			NetworkIsolated: rs.NetIsolated, MemoryBytes: rs.MemoryBytes, CPUMillis: rs.CPUMillis, PidsLimit: rs.PidsLimit,
			IdleTimeout: rs.IdleTimeout.Duration, DefaultTTL: rs.DefaultTTL.Duration,
		}
		if e.disks.enforced() {
			t.DiskBytes, t.DiskInodes = rs.DiskBytes, rs.DiskInodes
		}
		if !e.cg.Usable() {
			// What is applied, not what the template asks: nothing
			// (--no-limits; 0 is unlimited).
			t.MemoryBytes, t.CPUMillis, t.PidsLimit = 0, 0, 0
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Pools returns the warm pools of a namespace by name.
func (e *Engine) Pools(ns string) []PoolStatus {
	ns = nsOr(ns)
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []PoolStatus
	for _, p := range e.pools {
		if p.namespace == ns {
			out = append(out, e.poolStatus(p))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func noPool(ns, name string) error {
	return failf(ErrNotFound, errinfo.ReasonPoolNotFound, "warm pool %q not found in namespace %q", name, ns)
}

// Pool returns one pool with its ready and pending counts.
func (e *Engine) Pool(ns, name string) (PoolStatus, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pools[nsOr(ns)+"/"+name]
	if p == nil {
		return PoolStatus{}, noPool(nsOr(ns), name)
	}
	return e.poolStatus(p), nil
}

// ScalePool sets a pool's size; it survives a restart.
func (e *Engine) ScalePool(ns, name string, replicas int32) (PoolStatus, error) {
	if replicas > MaxPoolReplicas {
		return PoolStatus{}, failf(ErrExhausted, errinfo.ReasonPoolLimitExceeded, "replicas %d is above the local engine's limit of %d", replicas, MaxPoolReplicas)
	}
	key := nsOr(ns) + "/" + name
	e.mu.Lock()
	p := e.pools[key]
	if p == nil {
		e.mu.Unlock()
		return PoolStatus{}, noPool(nsOr(ns), name)
	}
	if err := e.store.putPoolReplicas(key, replicas); err != nil {
		e.mu.Unlock()
		return PoolStatus{}, failf(ErrUnavailable, errinfo.ReasonStoreUnavailable, "save: %v", err)
	}
	p.replicas = replicas
	// An explicit scale refills at once: no claim to wait for, and a
	// deficit as old as can be.
	p.lastClaim, p.deficit, p.deficitSince = time.Time{}, true, time.Time{}
	out := e.poolStatus(p)
	e.mu.Unlock()
	e.poke()
	return out, nil
}

// poolStatus counts a pool's members. Callers hold e.mu.
func (e *Engine) poolStatus(p *pool) PoolStatus {
	out := PoolStatus{Name: p.name, Namespace: p.namespace, Template: p.template, Replicas: p.replicas}
	for _, sb := range e.sandboxes {
		r := &sb.rec
		if r.Namespace != p.namespace || r.Pool != p.name || r.Claimed || r.Deleting {
			continue
		}
		// A member on its way out (failed, suspended) counts as neither.
		switch m := poolMember(sb); {
		case m.Ready:
			out.Ready++
		case !m.Failed:
			out.Pending++
		}
	}
	return out
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := copyMap(a)
	if out == nil && len(b) > 0 {
		out = map[string]string{}
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
