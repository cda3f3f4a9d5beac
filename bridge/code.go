package bridge

import (
	"context"
	"unicode/utf8"

	"github.com/sandpod/sandpod/core/agent"
	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Code calls are checked here and forwarded to the sandbox's agent, which
// runs the interpreters (core/agent/code.go), like exec.

// MaxCodeTimeout bounds a RunCode timeout.
const MaxCodeTimeout = 24 * 60 * 60 // seconds

func checkCodeContext(lang, id string) error {
	if err := agent.CheckLanguage(lang); err != nil {
		return invalid(errinfo.ReasonInvalidCode, "language", "%v", err)
	}
	if err := agent.CheckContextID(id); err != nil {
		return invalid(errinfo.ReasonInvalidContextID, "context_id", "%v", err)
	}
	return nil
}

func checkRunCode(req *sandpodv1.RunCodeRequest) error {
	if err := checkCodeContext(req.GetLanguage(), req.GetContextId()); err != nil {
		return err
	}
	if n := len(req.GetCode()); n > agent.MaxCodeBytes {
		return invalid(errinfo.ReasonInvalidCode, "code", "is %d bytes, the limit is %d (1 MiB); put large data in a file and read it from the code", n, agent.MaxCodeBytes)
	}
	if !utf8.ValidString(req.GetCode()) {
		return invalid(errinfo.ReasonInvalidCode, "code", "is not valid UTF-8")
	}
	if t := req.GetTimeout(); t != nil {
		if err := t.CheckValid(); err != nil || t.AsDuration() < 0 || t.GetSeconds() > MaxCodeTimeout {
			return invalid(errinfo.ReasonInvalidDuration, "timeout", "must be a valid duration between 0 and 24h")
		}
	}
	return checkEnv("env", req.GetEnv())
}

// withClaimEnv adds a claim's env (the endpoint's) under the request's.
func withClaimEnv(ep agentconn.Endpoint, env map[string]string) map[string]string {
	if len(ep.Env) == 0 {
		return env
	}
	out := make(map[string]string, len(ep.Env)+len(env))
	for k, v := range ep.Env {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// RunCode runs a cell in a code context, streaming its output.
func (s *Server) RunCode(req *sandpodv1.RunCodeRequest, stream sandpodv1.SandboxService_RunCodeServer) error {
	if err := checkRunCode(req); err != nil {
		return err
	}
	client, actx, ep, release, err := s.agentFor(stream.Context(), req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return err
	}
	defer release()
	req.Env = withClaimEnv(ep, req.GetEnv())
	down, err := client.RunCode(actx, req)
	if err != nil {
		return agentError(req.GetSandbox(), err)
	}
	return forward(req.GetSandbox(), down.Recv, stream.Send)
}

// CreateCodeContext starts an interpreter in a sandbox.
func (s *Server) CreateCodeContext(ctx context.Context, req *sandpodv1.CreateCodeContextRequest) (*sandpodv1.CreateCodeContextResponse, error) {
	if err := firstError(checkCodeContext(req.GetLanguage(), req.GetContextId()), checkPath("cwd", req.GetCwd()), checkEnv("env", req.GetEnv())); err != nil {
		return nil, err
	}
	client, actx, ep, release, err := s.agentFor(ctx, req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return nil, err
	}
	defer release()
	req.Env = withClaimEnv(ep, req.GetEnv())
	resp, err := client.CreateCodeContext(actx, req)
	return resp, agentError(req.GetSandbox(), err)
}

// ListCodeContexts lists a sandbox's interpreters.
func (s *Server) ListCodeContexts(ctx context.Context, req *sandpodv1.ListCodeContextsRequest) (*sandpodv1.ListCodeContextsResponse, error) {
	client, actx, _, release, err := s.agentFor(ctx, req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return nil, err
	}
	defer release()
	resp, err := client.ListCodeContexts(actx, req)
	return resp, agentError(req.GetSandbox(), err)
}

// DeleteCodeContext kills an interpreter.
func (s *Server) DeleteCodeContext(ctx context.Context, req *sandpodv1.DeleteCodeContextRequest) (*sandpodv1.DeleteCodeContextResponse, error) {
	if req.GetContextId() == "" {
		return nil, invalid(errinfo.ReasonInvalidContextID, "context_id", "is required")
	}
	if err := checkCodeContext("", req.GetContextId()); err != nil {
		return nil, err
	}
	client, actx, _, release, err := s.agentFor(ctx, req.GetNamespace(), req.GetSandbox())
	if err != nil {
		return nil, err
	}
	defer release()
	resp, err := client.DeleteCodeContext(actx, req)
	return resp, agentError(req.GetSandbox(), err)
}
