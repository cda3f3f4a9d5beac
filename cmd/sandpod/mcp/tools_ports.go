package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

type exposeArgs struct {
	Port                int    `json:"port" jsonschema:"TCP port inside the sandbox; the server must listen on 127.0.0.1, ::1 or all addresses."`
	Protocol            string `json:"protocol,omitempty" jsonschema:"http: an HTTP server (web apps, Jupyter, dev servers); tcp: raw bytes after an HTTP upgrade."`
	SignedURLTTLSeconds int    `json:"signed_url_ttl_seconds,omitempty" jsonschema:"How long the signed URL lets anyone in."`
	WaitSeconds         int    `json:"wait_seconds,omitempty" jsonschema:"How long to wait for something to answer on the port."`
	Sandbox             string `json:"sandbox,omitempty"`
}

type exposeResult struct {
	Sandbox   string `json:"sandbox"`
	Port      int    `json:"port"`
	Protocol  string `json:"protocol"`
	URL       string `json:"url" jsonschema:"The preview URL; it needs the API's bearer token when the server has tokens."`
	SignedURL string `json:"signed_url" jsonschema:"The same URL signed: anyone who has it gets in until expires_at (give this one to a person or a browser)."`
	ExpiresAt string `json:"expires_at"`
	Renewed   bool   `json:"renewed,omitempty" jsonschema:"The port was exposed already: these are new links, and the earlier ones no longer work."`
}

const defaultSignedURLTTL = 3600

func (s *Server) addExposePort() {
	addTool(s, &sdk.Tool{
		Name: "expose_port",
		Description: "Give a URL that reaches a TCP port inside a sandbox (a web app, a notebook server, an API you started there). " +
			"Start the server first, in the background (run_command with `setsid python3 -m http.server 8000 >/tmp/http.log 2>&1 &`); " +
			"this waits until the port answers. Returns the preview URL and a signed URL that works without a token until it expires. " +
			"Exposing a port again returns new links.",
		InputSchema: inputSchema[exposeArgs](map[string]bound{
			"port":                   {min: 1, max: 65535},
			"signed_url_ttl_seconds": {min: 1, max: 7 * 24 * 3600, def: defaultSignedURLTTL},
			"wait_seconds":           {min: 1, max: 600, def: 30},
		}, map[string][]any{"protocol": {"http", "tcp"}}),
		Annotations: additive,
	}, s.exposeTool)
}

func (s *Server) exposeTool(ctx context.Context, req *sdk.CallToolRequest, in exposeArgs) (*sdk.CallToolResult, exposeResult, error) {
	if in.Port < 1 || in.Port > 65535 {
		return nil, exposeResult{}, fmt.Errorf("port: must be 1..65535, got %d", in.Port)
	}
	protocol := sandpod.ProtocolHTTP
	switch in.Protocol {
	case "", "http":
	case "tcp":
		protocol = sandpod.ProtocolTCP
	default:
		return nil, exposeResult{}, fmt.Errorf("protocol %q: use http or tcp", in.Protocol)
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, exposeResult{}, err
	}
	wait := seconds(in.WaitSeconds, 30)
	opts := []sandpod.ExposeOption{sandpod.WithProtocol(protocol), sandpod.WithSignedURLTTL(seconds(in.SignedURLTTLSeconds, defaultSignedURLTTL))}
	expose := func() (*sandpod.ExposedPort, error) {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		return sb.ExposePort(wctx, in.Port, opts...)
	}
	ex, err := expose()
	renewed := false
	if errors.Is(err, sandpod.ErrAlreadyExists) {
		// A model that lost the link gets a new one rather than a refusal.
		if err = sb.UnexposePort(ctx, in.Port); err == nil || errors.Is(err, sandpod.ErrNotFound) {
			ex, err = expose()
			renewed = true
		}
	}
	if errors.Is(err, sandpod.ErrUnimplemented) {
		return nil, exposeResult{}, fmt.Errorf("sandbox %s: this sandpod server has no port previews (it must run with --preview-listen): %w", sb.Name(), err)
	}
	if err != nil {
		return nil, exposeResult{}, sandboxError(sess, sb.Name(), err)
	}
	return nil, exposeResult{
		Sandbox: sb.Name(), Port: ex.Port, Protocol: string(ex.Protocol), URL: ex.URL, SignedURL: ex.SignedURL,
		ExpiresAt: ex.ExpiresAt.UTC().Format(time.RFC3339), Renewed: renewed,
	}, nil
}
