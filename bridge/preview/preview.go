package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/bridge/check"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Port previews: the registry of exposed ports and the ExposePort,
// UnexposePort and ListExposedPorts calls. The preview listener
// (previewhttp.go) serves what is registered here.

const (
	// DefaultPreviewTTL is how long a signed preview URL lasts by default.
	DefaultPreviewTTL = time.Hour
	// MaxPreviewTTL bounds a signed URL: a leaked link must not be forever.
	MaxPreviewTTL = 7 * 24 * time.Hour
	// MaxExposedPorts bounds the exposures of one sandbox.
	MaxExposedPorts = v1alpha1.MaxExposedPorts
	// defaultExposeWait is the wait for a port when the call has no deadline.
	defaultExposeWait = 30 * time.Second
)

// Options turn previews on.
type Options struct {
	// URLTemplate is the preview URL with "*" for the host label, e.g.
	// "http://*.preview.localhost:50053".
	URLTemplate string
	// Key signs preview URLs (at least 32 bytes).
	Key []byte
	// StatePath, when set, is a file that keeps the exposures across
	// restarts (the local engine's state directory).
	StatePath string
}

// exposure is one exposed port. UID ties it to one incarnation of the
// sandbox: a new sandbox that reuses the name does not inherit it.
type exposure struct {
	ID        string                 `json:"id"`
	Namespace string                 `json:"namespace"`
	Sandbox   string                 `json:"sandbox"`
	UID       string                 `json:"uid"`
	Port      int32                  `json:"port"`
	Protocol  sandpodv1.PortProtocol `json:"protocol"`
}

type previews struct {
	opts Options
	// store keeps the exposures when the backend does (Kubernetes); byID
	// is then unused.
	store ExposureStore

	mu     sync.Mutex
	byID   map[string]*exposure
	conns  map[string]map[int]context.CancelFunc // ns/name -> open tunnels
	nextID int
	// suspended: sandboxes suspended through this bridge, until resumed.
	// On Kubernetes a suspend returns before the pod is gone and the
	// phase changes, and a port exposed in that gap would outlive the
	// suspend (a resume brings the same UID back).
	suspended map[string]time.Time
}

// suspendGap bounds how long a suspend through this bridge is remembered:
// by then the backend reports the sandbox suspended itself.
const suspendGap = 2 * time.Minute

func newPreviews() *previews {
	return &previews{byID: map[string]*exposure{}, conns: map[string]map[int]context.CancelFunc{}, suspended: map[string]time.Time{}}
}

// suspending notes a suspend (true) or a resume or delete (false).
func (p *previews) suspending(ns, name string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, t := range p.suspended { // forget the old ones on the way
		if time.Since(t) > suspendGap {
			delete(p.suspended, k)
		}
	}
	if on {
		p.suspended[nsKey(ns, name)] = time.Now()
	} else {
		delete(p.suspended, nsKey(ns, name))
	}
}

// EnablePreviews turns on ExposePort; serve the handler of PreviewHandler
// on a listener of its own.
func (s *Server) EnablePreviews(o Options) error {
	if len(o.Key) < 32 {
		return fmt.Errorf("previews: the signing key must be at least 32 bytes")
	}
	s.previews.mu.Lock()
	defer s.previews.mu.Unlock()
	s.previews.opts = o
	if st, ok := s.backend.(ExposureStore); ok {
		s.previews.store = st
		return nil
	}
	if o.StatePath == "" {
		return nil
	}
	b, err := os.ReadFile(o.StatePath)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var list []*exposure
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("previews: %s: %w (remove it to forget the exposed ports)", o.StatePath, err)
	}
	for _, e := range list {
		s.previews.byID[e.ID] = e
	}
	return nil
}

// saveLocked writes the exposures to the state file (atomically).
func (p *previews) saveLocked() {
	if p.opts.StatePath == "" {
		return
	}
	list := make([]*exposure, 0, len(p.byID))
	for _, e := range p.byID {
		list = append(list, e)
	}
	b, _ := json.Marshal(list)
	tmp := p.opts.StatePath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		_ = os.Rename(tmp, p.opts.StatePath)
	}
}

func (p *previews) enabled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.opts.Key) > 0
}

func (p *previews) get(id string) *exposure {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byID[id]
}

// find returns the exposures of a sandbox, by port.
func (p *previews) findLocked(ns, name string) []*exposure {
	var out []*exposure
	for _, e := range p.byID {
		if e.Namespace == ns && e.Sandbox == name {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// track registers an open tunnel of a sandbox so closeSandbox can cut it.
func (p *previews) track(ns, name string, cancel context.CancelFunc) func() {
	key := nsKey(ns, name)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	id := p.nextID
	if p.conns[key] == nil {
		p.conns[key] = map[int]context.CancelFunc{}
	}
	p.conns[key][id] = cancel
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.conns[key], id)
		if len(p.conns[key]) == 0 {
			delete(p.conns, key)
		}
	}
}

// closeSandbox forgets every exposure of a sandbox and cuts its open
// connections: called when it is suspended, deleted or found gone.
func (p *previews) closeSandbox(ns, name string) {
	if ns == "" {
		ns = "default"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := false
	for id, e := range p.byID {
		if nsKey(e.Namespace, e.Sandbox) == nsKey(ns, name) {
			delete(p.byID, id)
			changed = true
		}
	}
	if changed {
		p.saveLocked()
	}
	for _, cancel := range p.conns[nsKey(ns, name)] {
		cancel()
	}
}

func (p *previews) toProto(e *exposure) *sandpodv1.ExposedPort {
	return &sandpodv1.ExposedPort{
		Sandbox: e.Sandbox, Namespace: e.Namespace, Port: e.Port, Protocol: e.Protocol,
		Url: previewURL(p.opts.URLTemplate, previewLabel(e.Port, e.ID)),
	}
}

// checkPreviewPort is the edge check of a port: 1..65535 and not one of
// the agent's own.
func checkPreviewPort(port int32) error {
	if port < 1 || port > 65535 {
		return errinfo.Invalid(errinfo.ReasonInvalidPort, "port", "must be 1..65535, got %d", port)
	}
	if port == v1alpha1.AgentPort || port == v1alpha1.AgentHealthPort {
		return errinfo.Invalid(errinfo.ReasonInvalidPort, "port", "%d is the sandbox agent's own port and cannot be exposed", port)
	}
	return nil
}

func checkExposePort(req *sandpodv1.ExposePortRequest) error {
	return check.First(
		checkSandboxRef(req.GetSandbox(), req.GetNamespace()),
		checkPreviewPort(req.GetPort()),
		checkPortProtocol(req.GetProtocol()),
		checkPreviewTTL(req),
	)
}

func checkPortProtocol(p sandpodv1.PortProtocol) error {
	if _, ok := sandpodv1.PortProtocol_name[int32(p)]; !ok {
		return errinfo.Invalid(errinfo.ReasonInvalidPort, "protocol", "unknown protocol %d; use PORT_PROTOCOL_HTTP or PORT_PROTOCOL_TCP", p)
	}
	return nil
}

func checkPreviewTTL(req *sandpodv1.ExposePortRequest) error {
	t := req.GetSignedUrlTtl()
	if t == nil {
		return nil
	}
	if err := t.CheckValid(); err != nil || t.AsDuration() < time.Second || t.AsDuration() > MaxPreviewTTL {
		return errinfo.Invalid(errinfo.ReasonInvalidDuration, "signed_url_ttl", "must be between 1s and %s", MaxPreviewTTL)
	}
	return nil
}

// runningSandbox returns the sandbox if it runs: NOT_FOUND when it is
// gone, FAILED_PRECONDITION when it is not running.
func (s *Server) runningSandbox(ctx context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	sb, err := s.backend.GetSandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if sb.GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		if sb.GetPhase() == sandpodv1.Phase_PHASE_SUSPENDED {
			s.previews.suspending(ns, name, false) // the suspend is seen: no gap left
		}
		reason := lifecycle.RefusalReason(protoconv.PhaseFromProto(sb.GetPhase()))
		return nil, errinfo.Newf(codes.FailedPrecondition, reason, "sandbox %q is %s, not running: its ports cannot be reached (resume it first)", name, phaseWord(sb.GetPhase()))
	}
	return sb, nil
}

// ExposePort serves a port of a sandbox at a preview URL once it answers.
func (s *Server) ExposePort(ctx context.Context, req *sandpodv1.ExposePortRequest) (*sandpodv1.ExposePortResponse, error) {
	if err := checkExposePort(req); err != nil {
		return nil, err
	}
	if !s.previews.enabled() {
		return nil, errinfo.Newf(codes.Unimplemented, errinfo.ReasonPreviewsDisabled, "port previews are off on this server: start it with --preview-listen ADDR")
	}
	ns, name, port := req.GetNamespace(), req.GetSandbox(), req.GetPort()
	if ns == "" {
		ns = "default"
	}
	proto := req.GetProtocol()
	if proto == sandpodv1.PortProtocol_PORT_PROTOCOL_UNSPECIFIED {
		proto = sandpodv1.PortProtocol_PORT_PROTOCOL_HTTP
	}
	sb, err := s.runningSandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if err := s.previews.checkNew(ctx, ns, name, sb.GetUid(), port); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultExposeWait)
		defer cancel()
	}
	wctx, cancel := s.beforeDeadline(ctx)
	defer cancel()
	if err := s.waitPort(wctx, ns, name, port, proto); err != nil {
		return nil, err
	}
	e := &exposure{ID: newExposureID(), Namespace: ns, Sandbox: name, UID: sb.GetUid(), Port: port, Protocol: proto}
	if err := s.previews.add(ctx, e, s.now()); err != nil {
		return nil, err // e.g. exposed by a concurrent call while this one waited
	}
	s.previews.mu.Lock()
	defer s.previews.mu.Unlock()
	ttl := DefaultPreviewTTL
	if t := req.GetSignedUrlTtl(); t != nil {
		ttl = t.AsDuration()
	}
	exp := s.now().Add(ttl).Truncate(time.Second)
	out := s.previews.toProto(e)
	out.SignedUrl = out.Url + "?" + SigParam + "=" + signPreview(s.previews.opts.Key, e, exp)
	out.ExpireTime = timestamppb.New(exp)
	return &sandpodv1.ExposePortResponse{Exposed: out}, nil
}

func (p *previews) checkNew(ctx context.Context, ns, name, uid string, port int32) error {
	p.mu.Lock()
	if p.store == nil {
		defer p.mu.Unlock()
		return p.checkNewLocked(ns, name, uid, port)
	}
	err := p.checkNotSuspendingLocked(ns, name)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	curUID, list, err := p.store.Exposures(ctx, ns, name)
	if err != nil {
		return err
	}
	return p.checkNewList(ns, name, uid, curUID, list, port)
}

// add registers an exposure: in the store (one write) or in memory.
func (p *previews) add(ctx context.Context, e *exposure, now time.Time) error {
	if p.store == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := p.checkNewLocked(e.Namespace, e.Sandbox, e.UID, e.Port); err != nil {
			return err
		}
		p.byID[e.ID] = e
		p.saveLocked()
		return nil
	}
	p.mu.Lock()
	err := p.checkNotSuspendingLocked(e.Namespace, e.Sandbox)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	return p.store.UpdateExposures(ctx, e.Namespace, e.Sandbox, func(uid string, cur []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error) {
		if err := p.checkNewList(e.Namespace, e.Sandbox, e.UID, uid, cur, e.Port); err != nil {
			return nil, err
		}
		return append(cur, recordOf(e, now)), nil
	})
}

// checkNewList is checkNewLocked on a stored list: the same answers, and
// a sandbox replaced (another UID) while its port was awaited is refused.
func (p *previews) checkNewList(ns, name, uid, curUID string, list []v1alpha1.ExposedPort, port int32) error {
	if curUID != uid {
		return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxReplaced, "sandbox %q was deleted and created again while its port was awaited; expose the port again", name)
	}
	for _, x := range list {
		if x.Port == port {
			return errinfo.Newf(codes.AlreadyExists, errinfo.ReasonPortAlreadyExposed, "sandbox %q: port %d is already exposed at %s; UnexposePort it first for a new link", name, port, p.toProto(exposureOf(ns, name, uid, x)).GetUrl())
		}
	}
	if len(list) >= MaxExposedPorts {
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonExposedPortLimit, "sandbox %q already exposes %d ports (the limit); unexpose one first", name, len(list))
	}
	return nil
}

func (p *previews) checkNotSuspendingLocked(ns, name string) error {
	if t, ok := p.suspended[nsKey(ns, name)]; ok && time.Since(t) < suspendGap {
		return errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxSuspended, "sandbox %q is being suspended: its ports cannot be exposed (resume it first)", name)
	}
	return nil
}

// checkNewLocked refuses a port already exposed (ALREADY_EXISTS, with its
// URL) and a sandbox at its limit; exposures of an older sandbox of the
// same name are dropped on the way.
func (p *previews) checkNewLocked(ns, name, uid string, port int32) error {
	if err := p.checkNotSuspendingLocked(ns, name); err != nil {
		return err
	}
	n := 0
	for id, e := range p.byID {
		if e.Namespace != ns || e.Sandbox != name {
			continue
		}
		if e.UID != uid {
			delete(p.byID, id)
			continue
		}
		if e.Port == port {
			return errinfo.Newf(codes.AlreadyExists, errinfo.ReasonPortAlreadyExposed, "sandbox %q: port %d is already exposed at %s; UnexposePort it first for a new link", name, port, p.toProto(e).GetUrl())
		}
		n++
	}
	if n >= MaxExposedPorts {
		return errinfo.Newf(codes.ResourceExhausted, errinfo.ReasonExposedPortLimit, "sandbox %q already exposes %d ports (the limit); unexpose one first", name, n)
	}
	return nil
}

// UnexposePort closes a preview; its links stop working.
func (s *Server) UnexposePort(ctx context.Context, req *sandpodv1.UnexposePortRequest) (*sandpodv1.UnexposePortResponse, error) {
	if err := check.First(checkSandboxRef(req.GetSandbox(), req.GetNamespace()), checkPreviewPort(req.GetPort())); err != nil {
		return nil, err
	}
	ns := req.GetNamespace()
	if ns == "" {
		ns = "default"
	}
	if _, err := s.backend.GetSandbox(ctx, ns, req.GetSandbox()); err != nil {
		return nil, err
	}
	p := s.previews
	if p.store != nil {
		err := p.store.UpdateExposures(ctx, ns, req.GetSandbox(), func(_ string, cur []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error) {
			for i, x := range cur {
				if x.Port == req.GetPort() {
					return append(cur[:i:i], cur[i+1:]...), nil
				}
			}
			return nil, errinfo.Newf(codes.NotFound, errinfo.ReasonPortNotExposed, "sandbox %q: port %d is not exposed", req.GetSandbox(), req.GetPort())
		})
		if err != nil {
			return nil, err
		}
		return &sandpodv1.UnexposePortResponse{}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range p.byID {
		if e.Namespace == ns && e.Sandbox == req.GetSandbox() && e.Port == req.GetPort() {
			delete(p.byID, id)
			p.saveLocked()
			return &sandpodv1.UnexposePortResponse{}, nil
		}
	}
	return nil, errinfo.Newf(codes.NotFound, errinfo.ReasonPortNotExposed, "sandbox %q: port %d is not exposed", req.GetSandbox(), req.GetPort())
}

// ListExposedPorts lists the exposed ports of a sandbox (URLs unsigned).
func (s *Server) ListExposedPorts(ctx context.Context, req *sandpodv1.ListExposedPortsRequest) (*sandpodv1.ListExposedPortsResponse, error) {
	if err := checkSandboxRef(req.GetSandbox(), req.GetNamespace()); err != nil {
		return nil, err
	}
	ns := req.GetNamespace()
	if ns == "" {
		ns = "default"
	}
	sb, err := s.backend.GetSandbox(ctx, ns, req.GetSandbox())
	if err != nil {
		return nil, err
	}
	p := s.previews
	if p.store != nil {
		list, _, err := storedExposures(ctx, p.store, ns, req.GetSandbox())
		if err != nil {
			return nil, err
		}
		out := &sandpodv1.ListExposedPortsResponse{}
		for _, e := range list {
			out.Ports = append(out.Ports, p.toProto(e))
		}
		return out, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &sandpodv1.ListExposedPortsResponse{}
	for _, e := range p.findLocked(ns, req.GetSandbox()) {
		if e.UID == sb.GetUid() {
			out.Ports = append(out.Ports, p.toProto(e))
		}
	}
	return out, nil
}

func phaseWord(p sandpodv1.Phase) string {
	switch p {
	case sandpodv1.Phase_PHASE_PENDING:
		return "pending"
	case sandpodv1.Phase_PHASE_SUSPENDED:
		return "suspended"
	case sandpodv1.Phase_PHASE_EXPIRED:
		return "expired"
	case sandpodv1.Phase_PHASE_FAILED:
		return "failed"
	case sandpodv1.Phase_PHASE_TERMINATING:
		return "being deleted"
	}
	return p.String()
}

func (p *previews) key() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opts.Key
}

// checkSandboxRef checks the sandbox a preview call names (field "sandbox").
func checkSandboxRef(name, ns string) error {
	return check.First(check.Name("sandbox", name, true), check.Namespace(ns))
}
