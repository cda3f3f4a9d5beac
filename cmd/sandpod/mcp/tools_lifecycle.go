package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// maxTTLSeconds is the server's bound on a TTL (366 days).
const maxTTLSeconds = 366 * 24 * 3600

type claimArgs struct {
	Template   string `json:"template,omitempty" jsonschema:"Template to claim from (a warm one is handed out when the template's pool has one)."`
	TTLSeconds int    `json:"ttl_seconds,omitempty" jsonschema:"Delete the sandbox after this many seconds whatever happens. Leave it out for the template's default."`
	Keep       bool   `json:"keep,omitempty" jsonschema:"Keep the sandbox when this session ends (it then lives until its TTL or delete_sandbox). By default it is deleted with the session."`
}

type claimResult struct {
	Sandbox      string `json:"sandbox" jsonschema:"The new sandbox, now this session's: calls that name no sandbox use it."`
	Template     string `json:"template"`
	Warm         bool   `json:"warm" jsonschema:"It came ready from the template's warm pool."`
	ShutdownTime string `json:"shutdown_time,omitempty" jsonschema:"When it is deleted at the latest (RFC 3339)."`
	EndsWith     string `json:"ends_with" jsonschema:"What ends it: this session or its TTL."`
}

func (s *Server) addClaim() {
	in := inputSchema[claimArgs](map[string]bound{"ttl_seconds": {min: 1, max: maxTTLSeconds}}, nil)
	in.Properties["template"].Default = mustJSON(s.opts.Template) // the server's own setting
	addTool(s, &sdk.Tool{
		Name: "claim_sandbox",
		Description: "Claim a new isolated Linux sandbox and make it this session's sandbox: later calls that name no sandbox use it. " +
			"You rarely need this: the first call that names no sandbox claims one by itself. Use it for a fresh, empty sandbox, " +
			"another template, or a sandbox that outlives the session (keep).",
		InputSchema: in,
		Annotations: additive,
	}, s.claimTool)
}

func (s *Server) claimTool(ctx context.Context, req *sdk.CallToolRequest, in claimArgs) (*sdk.CallToolResult, claimResult, error) {
	sess, err := s.sessions.get(req.Session)
	if err != nil {
		return nil, claimResult{}, err
	}
	template := in.Template
	if template == "" {
		template = s.opts.Template
	}
	ttl := time.Duration(in.TTLSeconds) * time.Second
	var sb *sandpod.Sandbox
	if in.Keep {
		var opts []sandpod.SandboxOption
		if ttl > 0 {
			opts = append(opts, sandpod.WithTTL(ttl))
		}
		sb, err = s.client.Claim(ctx, template, opts...)
	} else {
		sb, err = s.claim(ctx, sess, template, ttl)
	}
	if err != nil {
		return nil, claimResult{}, fmt.Errorf("claiming a sandbox from template %q: %w", template, err)
	}
	out := claimResult{Sandbox: sb.Name(), Template: template, Warm: sb.Warm(), EndsWith: "this session's end, or its TTL if sooner"}
	if in.Keep {
		out.EndsWith = "its TTL or delete_sandbox: it outlives this session"
	} else if err := sess.own(ctx, sb); err != nil {
		return nil, claimResult{}, err
	}
	if t := sb.Info().ShutdownTime; !t.IsZero() {
		out.ShutdownTime = t.UTC().Format(time.RFC3339)
	}
	sess.mu.Lock()
	sess.current = sb.Name()
	sess.mu.Unlock()
	return nil, out, nil
}

type listArgs struct{}

type sandboxEntry struct {
	Name         string `json:"name"`
	Template     string `json:"template"`
	Phase        string `json:"phase" jsonschema:"Running, Pending, Suspended, Failed, ..."`
	Created      string `json:"created,omitempty"`
	ShutdownTime string `json:"shutdown_time,omitempty"`
	ThisSession  bool   `json:"this_session" jsonschema:"This session owns it: it is deleted when the session ends."`
	Current      bool   `json:"current" jsonschema:"Calls that name no sandbox use it."`
}

type listResult struct {
	Sandboxes []sandboxEntry `json:"sandboxes"`
	Truncated bool           `json:"truncated" jsonschema:"More sandboxes exist than the list holds."`
}

func (s *Server) addList() {
	addTool(s, &sdk.Tool{
		Name:        "list_sandboxes",
		Description: fmt.Sprintf("List the sandboxes of the namespace (at most %d), marking the ones this session owns and the one it uses by default.", MaxListEntries),
		InputSchema: inputSchema[listArgs](nil, nil),
		Annotations: readOnly,
	}, s.listTool)
}

func (s *Server) listTool(ctx context.Context, req *sdk.CallToolRequest, _ listArgs) (*sdk.CallToolResult, listResult, error) {
	sess, err := s.sessions.get(req.Session)
	if err != nil {
		return nil, listResult{}, err
	}
	sess.mu.Lock()
	current := sess.current
	sess.mu.Unlock()
	out := listResult{Sandboxes: []sandboxEntry{}}
	for sb, err := range s.client.List(ctx) {
		if err != nil {
			return nil, listResult{}, fmt.Errorf("listing sandboxes: %w", err)
		}
		if len(out.Sandboxes) == MaxListEntries {
			out.Truncated = true
			break
		}
		info := sb.Info()
		e := sandboxEntry{Name: info.Name, Template: info.Template, Phase: string(info.Phase),
			ThisSession: sess.isOwned(info.Name), Current: info.Name == current}
		if !info.CreateTime.IsZero() {
			e.Created = info.CreateTime.UTC().Format(time.RFC3339)
		}
		if !info.ShutdownTime.IsZero() {
			e.ShutdownTime = info.ShutdownTime.UTC().Format(time.RFC3339)
		}
		out.Sandboxes = append(out.Sandboxes, e)
	}
	return nil, out, nil
}

type deleteArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Name of the sandbox to delete, with its files and processes."`
}

type deleteResult struct {
	Sandbox string `json:"sandbox"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) addDelete() {
	addTool(s, &sdk.Tool{
		Name: "delete_sandbox",
		Description: "Delete a sandbox now, with its files and running processes. Deleting this session's sandbox is allowed: " +
			"the next call that names no sandbox then claims a new one.",
		InputSchema: inputSchema[deleteArgs](nil, nil),
		Annotations: destructive,
	}, s.deleteTool)
}

func (s *Server) deleteTool(ctx context.Context, req *sdk.CallToolRequest, in deleteArgs) (*sdk.CallToolResult, deleteResult, error) {
	if in.Sandbox == "" {
		return nil, deleteResult{}, errors.New("sandbox: name the sandbox to delete (list_sandboxes lists them)")
	}
	sess, err := s.sessions.get(req.Session)
	if err != nil {
		return nil, deleteResult{}, err
	}
	if err := s.client.Delete(ctx, in.Sandbox); err != nil {
		return nil, deleteResult{}, fmt.Errorf("sandbox %s: %w", in.Sandbox, err)
	}
	sess.forget(in.Sandbox)
	return nil, deleteResult{Sandbox: in.Sandbox, Deleted: true}, nil
}
