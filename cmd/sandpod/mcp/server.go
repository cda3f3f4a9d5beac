// Package mcp is `sandpod mcp`: a Model Context Protocol server, on the
// official Go SDK, that gives an MCP host (a desktop assistant, an IDE, an
// agent SDK) sandpod's sandboxes as tools: claim, list and delete
// sandboxes, run commands and code, read and write files, expose ports,
// snapshot, restore and fork. It talks to any sandpod API (`sandpod serve`,
// the bridge) through the Go client, over stdio or streamable HTTP
// (docs/agents.md).
package mcp

import (
	"context"
	"io"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// Options configure a Server.
type Options struct {
	// Template is the template of the sandbox a session gets when its first
	// call names none, and claim_sandbox's default.
	Template string
	// Lease is the lease of the sandboxes a session owns (renewed while it
	// lasts): how long they outlive a server killed without deleting them.
	// Zero: none (then only their TTL ends them).
	Lease time.Duration
	// Version is reported to MCP clients.
	Version string
	// Log gets the server's own messages (never stdout in stdio mode).
	Log *slog.Logger
}

// DefaultTemplate is the template of a session's implicit sandbox.
const DefaultTemplate = "python"

// DefaultLease is the lease of a session's sandboxes.
const DefaultLease = 2 * time.Minute

// Server is one MCP server over one sandpod client; it serves any number
// of MCP sessions (one over stdio, many over HTTP).
type Server struct {
	client   *sandpod.Client
	opts     Options
	log      *slog.Logger
	mcp      *sdk.Server
	sessions sessions
}

// New makes the server and its tools. The client's namespace is the one
// the tools act in.
func New(client *sandpod.Client, opts Options) *Server {
	if opts.Template == "" {
		opts.Template = DefaultTemplate
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{client: client, opts: opts, log: opts.Log}
	s.sessions.log = opts.Log
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "sandpod", Title: "sandpod sandboxes", Version: opts.Version},
		&sdk.ServerOptions{Instructions: s.instructions(), Logger: quiet(opts.Log)})
	s.addTools()
	return s
}

// quiet is log for the SDK, which says at level Info what every session
// does.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// instructions is what an MCP host may put in the model's context.
func (s *Server) instructions() string {
	return "Isolated Linux sandboxes (python3 with numpy and matplotlib, a shell, a file system) from sandpod. " +
		"Every tool takes an optional `sandbox`: leave it out to use this session's own sandbox, claimed from the " +
		"template \"" + s.opts.Template + "\" on first use and deleted when the session ends. claim_sandbox switches " +
		"the session to a new one. Output of one call is bounded (a result says when it was cut); read large files " +
		"in pieces with read_file's offset."
}

// RunStdio serves one MCP session on in and out (newline-delimited
// JSON-RPC) until the client closes in or ctx ends, then deletes the
// session's sandboxes.
func (s *Server) RunStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	err := s.mcp.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
	s.Close()
	return err
}

// Close ends every session (deleting its sandboxes) and refuses new
// calls.
func (s *Server) Close() {
	s.sessions.closeAll()
}
