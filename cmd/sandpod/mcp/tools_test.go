package mcp

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// connect runs a Server over an in-memory transport and returns a client
// session to it. The server's sandpod client points at address, which
// the tests that do not reach a sandbox leave without a server.
func connect(t *testing.T, address string) *sdk.ClientSession {
	t.Helper()
	ctx := t.Context()
	c, err := sandpod.Dial(ctx, address, sandpod.WithToken(""), sandpod.WithConnectTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s := New(c, Options{})
	t.Cleanup(s.Close)
	st, ct := sdk.NewInMemoryTransports()
	if _, err := s.mcp.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// closedAddress is a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestToolSchemas(t *testing.T) {
	cs := connect(t, closedAddress(t))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		var in, out struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		remarshal(t, tool.InputSchema, &in)
		remarshal(t, tool.OutputSchema, &out)
		if len(tool.Description) < 60 {
			t.Errorf("%s: a description a model can act on, not %q", tool.Name, tool.Description)
		}
		if in.Type != "object" || out.Type != "object" {
			t.Errorf("%s: input schema %q, output schema %q, want objects", tool.Name, in.Type, out.Type)
		}
		for prop, raw := range in.Properties {
			var p struct {
				Description string `json:"description"`
				Type        any    `json:"type"`
			}
			_ = json.Unmarshal(raw, &p)
			if p.Description == "" {
				t.Errorf("%s: argument %s has no description", tool.Name, prop)
			}
			if _, ok := p.Type.(string); !ok {
				t.Errorf("%s: argument %s has type %v, want one type (an optional argument is left out, not null)", tool.Name, prop, p.Type)
			}
		}
		_, hasSandbox := in.Properties["sandbox"]
		wantRequired := tool.Name == "delete_sandbox"
		if hasSandbox && slices.Contains(in.Required, "sandbox") != wantRequired {
			t.Errorf("%s: sandbox required = %v, want %v", tool.Name, !wantRequired, wantRequired)
		}
		if tool.Name != "list_sandboxes" && tool.Name != "claim_sandbox" && !hasSandbox {
			t.Errorf("%s: no sandbox argument", tool.Name)
		}
		if _, ok := out.Properties["sandbox"]; !ok && tool.Name != "list_sandboxes" {
			t.Errorf("%s: the result does not say which sandbox it used", tool.Name)
		}
	}
	want := []string{"claim_sandbox", "delete_sandbox", "expose_port", "fork_sandbox", "list_files", "list_sandboxes",
		"read_file", "restore_sandbox", "run_code", "run_command", "snapshot_sandbox", "write_file"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

// Bad input is answered with a tool error that says what is wrong, before
// anything reaches the sandpod server (there is none here).
func TestBadInputIsAToolError(t *testing.T) {
	cs := connect(t, closedAddress(t))
	cases := map[string]struct {
		tool string
		args map[string]any
		want string
	}{
		"neither command nor argv": {"run_command", map[string]any{}, "give command (a shell command line) or argv"},
		"command and argv":         {"run_command", map[string]any{"command": "ls", "argv": []string{"ls"}}, "not both"},
		"empty program":            {"run_command", map[string]any{"argv": []string{""}}, "argv[0]"},
		"command not a string":     {"run_command", map[string]any{"command": 5}, "command"},
		"timeout over the bound":   {"run_command", map[string]any{"command": "true", "timeout_seconds": 99999}, "maximum"},
		"unknown argument":         {"run_command", map[string]any{"command": "true", "shell": "bash"}, "shell"},
		"no code":                  {"run_code", map[string]any{"code": ""}, "code: give the Python code"},
		"code missing":             {"run_code", map[string]any{}, "code"},
		"no path to read":          {"read_file", map[string]any{"path": ""}, "path: give the file to read"},
		"read over the bound":      {"read_file", map[string]any{"path": "a", "max_bytes": MaxReadBytes + 1}, "maximum"},
		"negative offset":          {"read_file", map[string]any{"path": "a", "offset": -1}, "minimum"},
		"not base64":               {"write_file", map[string]any{"path": "a", "content": "!!", "encoding": "base64"}, "not base64"},
		"unknown encoding":         {"write_file", map[string]any{"path": "a", "content": "x", "encoding": "latin1"}, "encoding"},
		"port 0":                   {"expose_port", map[string]any{"port": 0}, "minimum"},
		"port too high":            {"expose_port", map[string]any{"port": 70000}, "maximum"},
		"udp":                      {"expose_port", map[string]any{"port": 80, "protocol": "udp"}, "protocol"},
		"too many forks":           {"fork_sandbox", map[string]any{"count": 9}, "maximum"},
		"fork from both":           {"fork_sandbox", map[string]any{"snapshot": "s", "sandbox": "x"}, "not both"},
		"delete names none":        {"delete_sandbox", map[string]any{}, "sandbox"},
		"delete empty name":        {"delete_sandbox", map[string]any{"sandbox": ""}, "name the sandbox to delete"},
		"restore names none":       {"restore_sandbox", map[string]any{"snapshot": ""}, "snapshot: name the snapshot"},
		"ttl zero":                 {"claim_sandbox", map[string]any{"ttl_seconds": 0}, "minimum"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("a protocol error, want a tool error: %v", err)
			}
			if !res.IsError {
				t.Fatalf("not an error: %+v", res)
			}
			if got := text(res); !strings.Contains(got, tc.want) {
				t.Errorf("error %q does not say %q", got, tc.want)
			}
		})
	}
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// A sandpod server that does not answer fails the call, naming the
// address, and the MCP server goes on answering.
func TestUnreachableServerIsAToolError(t *testing.T) {
	addr := closedAddress(t)
	cs := connect(t, addr)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), addr) || !strings.Contains(text(res), `template "python"`) {
		t.Errorf("want a tool error naming %s and the template, got %+v", addr, text(res))
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("the server stopped answering: %v", err)
	}
}
