package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestUnsupportedCreate(t *testing.T) {
	for body, want := range map[string]string{
		`{"templateID": "base"}`:                         "",
		`{"templateID": "base", "mcp": null}`:            "",
		`{"templateID": "base", "network": {}}`:          "",
		`{"mcp": {"x": 1}}`:                              "the MCP gateway (mcp)",
		`{"network": {"denyOut": ["0.0.0.0/0"]}}`:        "per-sandbox network rules (network)",
		`{"volumeMounts": [{"name": "v", "path": "/"}]}`: "E2B volumes (volumeMounts)",
		`{"autoPause": false}`:                           "",
		`{"autoPause": true}`:                            "pausing at the timeout (lifecycle on_timeout: pause; sandpod's templates pause or suspend when idle)",
	} {
		var b newSandbox
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			t.Fatal(err)
		}
		if got := unsupportedCreate(b); got != want {
			t.Errorf("unsupportedCreate(%s) = %q, want %q", body, got, want)
		}
	}
}

// Routes that do not map are answered 501 with E2B's error body naming the
// feature, before any call to the API (none is made: there is no backend).
func TestNotSupportedRoutes(t *testing.T) {
	s := New(nil, Options{})
	for name, tc := range map[string]struct {
		method, path string
		header       map[string]string
		want         string
	}{
		"metrics":      {"GET", "/sandboxes/sb-1/metrics", nil, "sandbox metrics"},
		"snapshots":    {"POST", "/sandboxes/sb-1/snapshots", nil, "E2B snapshots"},
		"templates":    {"GET", "/templates/base/tags", nil, "E2B templates"},
		"volumes":      {"GET", "/volumes", nil, "E2B volumes"},
		"unknown":      {"GET", "/nope", nil, "E2B API route GET /nope"},
		"other port":   {"GET", "/", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "8080"}, "port 8080 of sandbox sb-1"},
		"envd unknown": {"GET", "/envs", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "49983"}, "envd route GET /envs"},
		"ci unknown":   {"GET", "/nope", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "49999"}, "code interpreter route"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var body errorJSON
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		wantCode := http.StatusNotImplemented
		if name == "other port" {
			wantCode = http.StatusBadGateway
		}
		if w.Code != wantCode || body.Code != wantCode || !strings.Contains(body.Message, tc.want) {
			t.Errorf("%s: %d %s, want %d naming %q", name, w.Code, w.Body, wantCode, tc.want)
		}
	}
}
