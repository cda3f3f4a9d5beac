package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// codeContexts are a sandbox's interpreters. A slot is reserved (nil)
// while its interpreter starts, so the limit holds under concurrent
// creates.
type codeContexts struct {
	mu   sync.Mutex
	byID map[string]*codeContext
}

func contextNotFound(id string) error {
	return errinfo.New(codes.NotFound, errinfo.ReasonCodeContextNotFound, map[string]string{"context_id": id},
		"code context "+quoteID(id)+" not found: it was never created, was deleted, or its interpreter died; create a new one (or omit context_id to use the default context)")
}

func quoteID(id string) string { return `"` + truncateForMessage(id) + `"` }

// reserve takes a slot for id, or says why not.
func (cs *codeContexts) reserve(id string) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byID == nil {
		cs.byID = map[string]*codeContext{}
	}
	if _, ok := cs.byID[id]; ok {
		return errinfo.New(codes.AlreadyExists, errinfo.ReasonCodeContextExists, map[string]string{"context_id": id},
			"code context "+quoteID(id)+" already exists")
	}
	if len(cs.byID) >= MaxCodeContexts {
		return errinfo.New(codes.ResourceExhausted, errinfo.ReasonCodeContextLimit, map[string]string{"limit": "8"},
			"the sandbox has 8 code contexts, the limit: delete one first")
	}
	cs.byID[id] = nil
	return nil
}

func (cs *codeContexts) fill(id string, c *codeContext) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c == nil {
		delete(cs.byID, id)
		return
	}
	cs.byID[id] = c
}

// get returns a live context; starting tells that its slot is reserved.
func (cs *codeContexts) get(id string) (c *codeContext, starting bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.byID[id]
	return c, ok && c == nil
}

// remove forgets c (if id still names it) and returns whether it did.
func (cs *codeContexts) remove(id string, c *codeContext) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cur, ok := cs.byID[id]; ok && cur == c && c != nil {
		delete(cs.byID, id)
		return true
	}
	return false
}

func (cs *codeContexts) list() []*codeContext {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]*codeContext, 0, len(cs.byID))
	for _, c := range cs.byID {
		if c != nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (cs *codeContexts) killAll() {
	for _, c := range cs.list() {
		c.close()
	}
}

// createContext starts a context under id and registers it; it is
// forgotten when its interpreter dies.
func (s *Server) createContext(ctx context.Context, id, cwd string, env map[string]string) (*codeContext, error) {
	if err := s.code.reserve(id); err != nil {
		return nil, err
	}
	c, err := s.startContext(ctx, id, cwd, env)
	s.code.fill(id, c)
	if err != nil {
		return nil, err
	}
	go func() {
		<-c.dead
		s.code.remove(id, c)
	}()
	return c, nil
}

func contextPB(c *codeContext) *sandpodv1.CodeContext {
	return &sandpodv1.CodeContext{
		Id: c.id, Language: c.language, Cwd: c.cwd, CreateTime: timestamppb.New(c.created),
		ExecutionCount: c.count.Load(), Busy: c.busy.Load(),
	}
}

func checkCodeArgs(lang, id string) error {
	if err := CheckLanguage(lang); err != nil {
		return statusInvalid(errinfo.ReasonInvalidCode, "language", err)
	}
	if err := CheckContextID(id); err != nil {
		return statusInvalid(errinfo.ReasonInvalidContextID, "context_id", err)
	}
	return nil
}

func statusInvalid(reason errinfo.Why, field string, err error) error {
	return errinfo.New(codes.InvalidArgument, reason, map[string]string{"field": field}, "code: "+field+": "+err.Error())
}

// CreateCodeContext starts an interpreter.
func (s *Server) CreateCodeContext(ctx context.Context, req *sandpodv1.CreateCodeContextRequest) (*sandpodv1.CreateCodeContextResponse, error) {
	if err := checkCodeArgs(req.GetLanguage(), req.GetContextId()); err != nil {
		return nil, err
	}
	id := req.GetContextId()
	if id == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		id = "ctx-" + hex.EncodeToString(b[:])
	}
	c, err := s.createContext(ctx, id, req.GetCwd(), req.GetEnv())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.CreateCodeContextResponse{Context: contextPB(c)}, nil
}

// ListCodeContexts lists the live interpreters.
func (s *Server) ListCodeContexts(context.Context, *sandpodv1.ListCodeContextsRequest) (*sandpodv1.ListCodeContextsResponse, error) {
	resp := &sandpodv1.ListCodeContextsResponse{}
	for _, c := range s.code.list() {
		resp.Contexts = append(resp.Contexts, contextPB(c))
	}
	return resp, nil
}

// DeleteCodeContext kills an interpreter; a cell running in it ends with
// ContextDied.
func (s *Server) DeleteCodeContext(_ context.Context, req *sandpodv1.DeleteCodeContextRequest) (*sandpodv1.DeleteCodeContextResponse, error) {
	id := req.GetContextId()
	if id == "" {
		return nil, statusInvalid(errinfo.ReasonInvalidContextID, "context_id", errRequired)
	}
	if err := CheckContextID(id); err != nil {
		return nil, statusInvalid(errinfo.ReasonInvalidContextID, "context_id", err)
	}
	c, _ := s.code.get(id)
	if c == nil || !s.code.remove(id, c) {
		return nil, contextNotFound(id)
	}
	c.deleted.Store(true)
	c.close()
	return &sandpodv1.DeleteCodeContextResponse{}, nil
}

// RunCode runs one cell; see runCell.
func (s *Server) RunCode(req *sandpodv1.RunCodeRequest, stream sandpodv1.AgentService_RunCodeServer) error {
	if err := checkCodeArgs(req.GetLanguage(), req.GetContextId()); err != nil {
		return err
	}
	if len(req.GetCode()) > MaxCodeBytes {
		return statusInvalid(errinfo.ReasonInvalidCode, "code", errTooLarge(len(req.GetCode())))
	}
	if !utf8.ValidString(req.GetCode()) {
		return statusInvalid(errinfo.ReasonInvalidCode, "code", errNotUTF8)
	}
	id := req.GetContextId()
	c, starting := s.code.get(orDefault(id))
	switch {
	case c == nil && id != "":
		return contextNotFound(id)
	case c == nil && starting:
		// Another call is creating the default context: wait for it.
		var err error
		if c, err = s.awaitDefault(stream.Context()); err != nil {
			return err
		}
	case c == nil:
		var err error
		c, err = s.createContext(stream.Context(), DefaultCodeContext, "", req.GetEnv())
		if errinfo.Reason(err) == errinfo.ReasonCodeContextExists {
			c, err = s.awaitDefault(stream.Context())
		}
		if err != nil {
			return err
		}
	}
	s.running.Add(1)
	defer s.running.Add(-1)
	defer s.touch()
	return s.runCell(stream.Context(), c, req, stream.Send)
}

func orDefault(id string) string {
	if id == "" {
		return DefaultCodeContext
	}
	return id
}
