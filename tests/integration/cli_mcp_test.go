package integration

import (
	"strings"
	"testing"
)

// `sandpod mcp`'s own flags, refused before it serves anything (no sandpod
// server is needed for any of these). The MCP sessions themselves are
// tested with the official Python MCP client: tests/python/integration/test_mcp.py.
func TestCLIMCPFlags(t *testing.T) {
	c := newCLI(t, "127.0.0.1:1")
	for _, tc := range []struct {
		args  []string
		code  int
		parts []string
	}{
		{[]string{"mcp", "--token-file", "tokens"}, 2, []string{"go with --listen"}},
		{[]string{"mcp", "--session-timeout", "1m"}, 2, []string{"go with --listen"}},
		{[]string{"mcp", "extra"}, 2, []string{"unknown command"}},
		{[]string{"mcp", "--listen", "127.0.0.1:0", "--token-file", "/nonexistent/tokens"}, 78, []string{"token file", "/nonexistent/tokens"}},
		{[]string{"mcp", "--listen", "0.0.0.0:0"}, 2, []string{"not a loopback address", "--token-file"}},
		{[]string{"mcp", "--listen", "nowhere"}, 2, []string{"--listen nowhere"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c.run(tc.args...).want(t, tc.code, tc.parts...)
		})
	}
}
