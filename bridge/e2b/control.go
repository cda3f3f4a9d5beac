package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// defaultTimeout is a sandbox's lifetime when a create names none (E2B's
// SDKs always send one: 300 s).
const defaultTimeout = 300 * time.Second

// maxBodyBytes caps a control API request body.
const maxBodyBytes = 1 << 20

// controlRoutes are the control API's routes: the paths E2B's OpenAPI
// client (e2b/api/client) calls.
func (s *Server) controlRoutes() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /sandboxes", s.create)
	m.HandleFunc("POST /v2/sandboxes", s.create)
	m.HandleFunc("GET /sandboxes", s.list)
	m.HandleFunc("GET /v2/sandboxes", s.list)
	m.HandleFunc("GET /sandboxes/{id}", s.get)
	m.HandleFunc("DELETE /sandboxes/{id}", s.kill)
	m.HandleFunc("POST /sandboxes/{id}/timeout", s.setTimeout)
	m.HandleFunc("POST /sandboxes/{id}/refreshes", s.refresh)
	m.HandleFunc("POST /sandboxes/{id}/pause", s.pause)
	m.HandleFunc("POST /sandboxes/{id}/resume", s.connect)
	m.HandleFunc("POST /sandboxes/{id}/connect", s.connect)
	m.HandleFunc("POST /v2/sandboxes/{id}/connect", s.connect)
	for route, feature := range notSupported {
		m.HandleFunc(route, func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotImplemented, feature+" is not supported by sandpod")
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotImplemented, "E2B API route "+r.Method+" "+r.URL.Path+" is not supported by sandpod")
	})
	return m
}

// notSupported are the E2B API routes sandpod answers 501, with the
// feature each names (docs/e2b.md).
var notSupported = map[string]string{
	"GET /sandboxes/{id}/metrics":    "sandbox metrics (CPU, memory and disk usage)",
	"GET /sandboxes/metrics":         "sandbox metrics (CPU, memory and disk usage)",
	"GET /sandboxes/{id}/logs":       "sandbox logs",
	"GET /v2/sandboxes/{id}/logs":    "sandbox logs",
	"PUT /sandboxes/{id}/network":    "updating a sandbox's network rules",
	"POST /sandboxes/{id}/snapshots": "E2B snapshots (use sandpod's SnapshotSandbox)",
	"POST /sandboxes/{id}/fork":      "E2B fork (use sandpod's ForkSandbox)",
	"/snapshots":                     "E2B snapshots (use sandpod's ListSnapshots)",
	"/templates":                     "E2B templates (sandpod's templates are SandboxTemplate objects)",
	"/templates/":                    "E2B templates (sandpod's templates are SandboxTemplate objects)",
	"/v2/templates/":                 "E2B templates (sandpod's templates are SandboxTemplate objects)",
	"/v3/templates":                  "E2B templates (sandpod's templates are SandboxTemplate objects)",
	"/default-templates":             "E2B templates (sandpod's templates are SandboxTemplate objects)",
	"/volumes":                       "E2B volumes",
	"/volumes/":                      "E2B volumes",
	"/secrets":                       "E2B secrets",
	"/secrets/":                      "E2B secrets",
	"/unstable/":                     "sandbox records",
}

// newSandbox is E2B's NewSandbox(V2) body; fields sandpod cannot honour
// are refused by name rather than ignored.
type newSandbox struct {
	TemplateID   string            `json:"templateID"`
	Timeout      *int64            `json:"timeout"`
	Metadata     map[string]string `json:"metadata"`
	EnvVars      map[string]string `json:"envVars"`
	MCP          json.RawMessage   `json:"mcp"`
	Network      json.RawMessage   `json:"network"`
	VolumeMounts json.RawMessage   `json:"volumeMounts"`
	IAM          json.RawMessage   `json:"iam"`
	AutoPause    *bool             `json:"autoPause"`
}

// unsupportedCreate names the first field of a create sandpod cannot
// honour, "" when none.
func unsupportedCreate(b newSandbox) string {
	set := func(m json.RawMessage) bool { s := string(m); return s != "" && s != "null" && s != "{}" && s != "[]" }
	switch {
	case set(b.MCP):
		return "the MCP gateway (mcp)"
	case set(b.Network):
		return "per-sandbox network rules (network)"
	case set(b.VolumeMounts):
		return "E2B volumes (volumeMounts)"
	case set(b.IAM):
		return "workload identity tokens (iam)"
	case b.AutoPause != nil && *b.AutoPause:
		return "pausing at the timeout (lifecycle on_timeout: pause; sandpod's templates pause or suspend when idle)"
	}
	return ""
}

// decode reads r's JSON body into v; an empty body leaves v as it is.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return false
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return true
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, http.StatusBadRequest, "the request body is not valid JSON for this route: "+err.Error())
		return false
	}
	return true
}

// timeoutOf is a timeout in seconds as a shutdown time; E2B's timeouts are
// whole seconds, at least 0.
func (s *Server) shutdownAfter(seconds int64) (*timestamppb.Timestamp, error) {
	if seconds < 0 {
		return nil, fmt.Errorf("timeout must be at least 0 seconds, got %d", seconds)
	}
	return timestamppb.New(s.now().Add(time.Duration(seconds) * time.Second)), nil
}

// token is the envd access token a create or connect answers: the
// caller's API key (sandpod has no per-sandbox tokens), none when the API
// authenticates nobody.
func (s *Server) token(r *http.Request) *string {
	if s.opts.Open {
		return nil
	}
	k := strings.TrimSpace(r.Header.Get("X-API-Key"))
	if k == "" {
		return nil
	}
	return &k
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var b newSandbox
	if !decode(w, r, &b) {
		return
	}
	if f := unsupportedCreate(b); f != "" {
		writeError(w, http.StatusNotImplemented, f+" is not supported by sandpod")
		return
	}
	secs := int64(defaultTimeout / time.Second)
	if b.Timeout != nil {
		secs = *b.Timeout
	}
	shutdown, err := s.shutdownAfter(secs)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := withToken(r.Context(), r.Header)
	req := &sandpodv1.ClaimSandboxRequest{
		Template:     templateFor(b.TemplateID, s.opts.DefaultTemplate),
		Namespace:    s.opts.Namespace,
		Labels:       metadataLabels(b.Metadata),
		Env:          b.EnvVars,
		ShutdownTime: shutdown,
		RequestId:    r.Header.Get("Idempotency-Key"),
	}
	res, err := s.api.ClaimSandbox(ctx, req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, describe(res.GetSandbox(), nil, s.token(r)))
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	ctx := withToken(r.Context(), r.Header)
	res, err := s.api.GetSandbox(ctx, &sandpodv1.GetSandboxRequest{Name: r.PathValue("id"), Namespace: s.opts.Namespace})
	if err != nil {
		writeStatus(w, err)
		return
	}
	var tpl *sandpodv1.Template
	if ts, err := s.api.ListTemplates(ctx, &sandpodv1.ListTemplatesRequest{Namespace: s.opts.Namespace}); err == nil {
		for _, t := range ts.GetTemplates() {
			if t.GetName() == res.GetSandbox().GetTemplate() {
				tpl = t
			}
		}
	}
	writeJSON(w, http.StatusOK, describe(res.GetSandbox(), tpl, s.token(r)))
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := metadataSelector(q.Get("metadata"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	states := map[string]bool{}
	for st := range strings.SplitSeq(q.Get("state"), ",") {
		if st = strings.TrimSpace(st); st != "" {
			if st != "running" && st != "paused" {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("state %q: want running or paused", st))
				return
			}
			states[st] = true
		}
	}
	size := 0
	if l := q.Get("limit"); l != "" {
		if size, err = strconv.Atoi(l); err != nil || size < 1 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want a positive number", l))
			return
		}
	}
	ctx := withToken(r.Context(), r.Header)
	res, err := s.api.ListSandboxes(ctx, &sandpodv1.ListSandboxesRequest{
		Namespace: s.opts.Namespace, LabelSelector: sel, PageSize: int32(min(size, 1000)), PageToken: q.Get("nextToken"),
	})
	if err != nil {
		writeStatus(w, err)
		return
	}
	out := []sandboxJSON{}
	for _, sb := range res.GetSandboxes() {
		if tpl := q.Get("template"); tpl != "" && sb.GetTemplate() != tpl {
			continue
		}
		j := describe(sb, nil, nil)
		if len(states) > 0 && !states[j.State] {
			continue
		}
		out = append(out, j)
	}
	if t := res.GetNextPageToken(); t != "" {
		w.Header().Set("X-Next-Token", t)
	}
	writeJSON(w, http.StatusOK, out)
}

// kill deletes the sandbox. Its commands' followers are told first (once
// the caller is known to see the sandbox), so that they report a deleted
// sandbox rather than the SIGKILL exit statuses its end brings.
func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	ctx := withToken(r.Context(), r.Header)
	name := r.PathValue("id")
	if _, err := s.lookup(ctx, name); err != nil {
		writeStatus(w, err)
		return
	}
	s.procs.forget(s.opts.Namespace, name)
	s.watch.forget(sbxKey(s.opts.Namespace, name))
	if _, err := s.api.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: name, Namespace: s.opts.Namespace}); err != nil {
		writeStatus(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// lookup is a sandbox of the front door's namespace; that the caller may
// see it is checked on the way.
func (s *Server) lookup(ctx context.Context, name string) (*sandpodv1.Sandbox, error) {
	res, err := s.api.GetSandbox(ctx, &sandpodv1.GetSandboxRequest{Name: name, Namespace: s.opts.Namespace})
	return res.GetSandbox(), err
}

// extend sets the sandbox's shutdown time to seconds from now.
func (s *Server) extend(w http.ResponseWriter, r *http.Request, seconds int64) bool {
	shutdown, err := s.shutdownAfter(seconds)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	ctx := withToken(r.Context(), r.Header)
	_, err = s.api.ExtendSandbox(ctx, &sandpodv1.ExtendSandboxRequest{Name: r.PathValue("id"), Namespace: s.opts.Namespace, ShutdownTime: shutdown})
	if err != nil {
		writeStatus(w, err)
		return false
	}
	return true
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Timeout *int64 `json:"timeout"`
	}
	if !decode(w, r, &b) {
		return
	}
	if b.Timeout == nil {
		writeError(w, http.StatusBadRequest, "timeout is required (seconds)")
		return
	}
	if *b.Timeout == 0 {
		// The end of the sandbox's life is now.
		s.kill(w, r)
		return
	}
	if s.extend(w, r, *b.Timeout) {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Duration *int64 `json:"duration"`
	}
	if !decode(w, r, &b) {
		return
	}
	secs := int64(defaultTimeout / time.Second)
	if b.Duration != nil {
		secs = *b.Duration
	}
	if s.extend(w, r, secs) {
		w.WriteHeader(http.StatusNoContent)
	}
}

// pause keeps the processes with their memory (sandpod's pause) unless the
// caller asks for a pause without memory (sandpod's suspend: the processes
// stop, the workspace stays).
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Memory *bool `json:"memory"`
	}
	if !decode(w, r, &b) {
		return
	}
	ctx := withToken(r.Context(), r.Header)
	name := r.PathValue("id")
	sb, err := s.lookup(ctx, name)
	if err != nil {
		writeStatus(w, err)
		return
	}
	if state(sb) == "paused" {
		writeError(w, http.StatusConflict, "sandbox "+name+" is already paused")
		return
	}
	if b.Memory != nil && !*b.Memory {
		_, err = s.api.SuspendSandbox(ctx, &sandpodv1.SuspendSandboxRequest{Name: name, Namespace: s.opts.Namespace})
	} else {
		_, err = s.api.PauseSandbox(ctx, &sandpodv1.PauseSandboxRequest{Name: name, Namespace: s.opts.Namespace})
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connect resumes a paused sandbox and sets its timeout, when given:
// 200 for a sandbox that was running, 201 for one it resumed.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Timeout *int64 `json:"timeout"`
	}
	if !decode(w, r, &b) {
		return
	}
	ctx := withToken(r.Context(), r.Header)
	name := r.PathValue("id")
	sb, err := s.lookup(ctx, name)
	if err != nil {
		writeStatus(w, err)
		return
	}
	code := http.StatusOK
	if state(sb) == "paused" {
		res, err := s.api.ResumeSandbox(ctx, &sandpodv1.ResumeSandboxRequest{Name: name, Namespace: s.opts.Namespace})
		if err != nil {
			writeStatus(w, err)
			return
		}
		code, sb = http.StatusCreated, res.GetSandbox()
	}
	if b.Timeout != nil {
		// Connecting never shortens a sandbox's life, as on E2B.
		until := s.now().Add(time.Duration(*b.Timeout) * time.Second)
		if sb.GetShutdownTime() == nil || until.After(sb.GetShutdownTime().AsTime()) {
			if !s.extend(w, r, *b.Timeout) {
				return
			}
			sb.ShutdownTime = timestamppb.New(until)
		}
	}
	writeJSON(w, code, describe(sb, nil, s.token(r)))
}
