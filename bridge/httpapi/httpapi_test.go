package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/proto/sandpod/v1/gateway"
)

func TestWriteErrorStatusAndBody(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		httpStatus int
		status     string
		reason     errinfo.Why
	}{
		{"sandbox not found", errinfo.SandboxNotFound("default", "x"), 404, "NOT_FOUND", errinfo.ReasonSandboxNotFound},
		{"invalid", status.Error(codes.InvalidArgument, "name: bad"), 400, "INVALID_ARGUMENT", ""},
		{"unauthenticated", status.Error(codes.Unauthenticated, "no token"), 401, "UNAUTHENTICATED", ""},
		{"permission", status.Error(codes.PermissionDenied, "ns"), 403, "PERMISSION_DENIED", ""},
		{"exhausted", status.Error(codes.ResourceExhausted, "limit"), 429, "RESOURCE_EXHAUSTED", ""},
		{"precondition", status.Error(codes.FailedPrecondition, "suspended"), 400, "FAILED_PRECONDITION", ""},
		{"exists", status.Error(codes.AlreadyExists, "taken"), 409, "ALREADY_EXISTS", ""},
		{"unavailable", status.Error(codes.Unavailable, "retry"), 503, "UNAVAILABLE", ""},
		{"deadline", status.Error(codes.DeadlineExceeded, "slow"), 504, "DEADLINE_EXCEEDED", ""},
		{"too large", status.FromProto(tooLarge(10)).Err(), 413, "RESOURCE_EXHAUSTED", errinfo.ReasonRequestTooLarge},
		{"not a status", errors.New("boom"), 500, "UNKNOWN", ""},
		{"gateway status", &runtime.HTTPStatusError{HTTPStatus: 405, Err: status.Error(codes.Unimplemented, "x")}, 405, "UNIMPLEMENTED", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest("GET", "/v1/sandboxes/x", nil), tc.err)
			if w.Code != tc.httpStatus {
				t.Errorf("HTTP status %d, want %d", w.Code, tc.httpStatus)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var wrapped struct{ Error errorBody }
			if err := json.Unmarshal(w.Body.Bytes(), &wrapped); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			body := wrapped.Error
			if body.Status != tc.status || body.Reason != string(tc.reason) || codes.Code(body.Code).String() == "" {
				t.Errorf("body %+v, want status %s reason %q", body, tc.status, tc.reason)
			}
			if body.Code != int32(status.Code(tc.err)) && tc.name != "gateway status" {
				t.Errorf("code %d, want %d", body.Code, status.Code(tc.err))
			}
			if (tc.httpStatus == 401) != (w.Header().Get("WWW-Authenticate") != "") {
				t.Errorf("WWW-Authenticate %q on a %d", w.Header().Get("WWW-Authenticate"), tc.httpStatus)
			}
		})
	}
}

func TestBodyOverLimitIs413(t *testing.T) {
	// Announced by Content-Length: refused before reading.
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/v1/sandboxes:claim", strings.NewReader(strings.Repeat("x", 11)))
	if _, ok := withLimit(w, r, 10); ok || w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("ok=%v code=%d, want 413", ok, w.Code)
	}
	// Found out while reading (chunked): whatever error the reader then
	// reports is answered 413.
	w = httptest.NewRecorder()
	r = httptest.NewRequest("POST", "/v1/sandboxes:claim", strings.NewReader(strings.Repeat("x", 11)))
	r.ContentLength = -1
	r, ok := withLimit(w, r, 10)
	if !ok {
		t.Fatal("refused a body of unknown length")
	}
	if err := json.NewDecoder(r.Body).Decode(new(any)); err == nil {
		t.Fatal("read past the limit")
	}
	writeError(w, r, status.Error(codes.InvalidArgument, "decode"))
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("code %d, want 413", w.Code)
	}
}

func TestUploadHeader(t *testing.T) {
	for _, tc := range []struct {
		query   string
		mode    uint32
		parents bool
		errPart string
	}{
		{"path=a.txt", 0, false, ""},
		{"path=a.txt&mode=0755&makeParents=true", 0o755, true, ""},
		{"path=a.txt&mode=644&make_parents=1", 0o644, true, ""},
		{"path=a.txt&mode=9", 0, false, "mode"},
		{"path=a.txt&mode=17777", 0, false, "mode"},
		{"path=a.txt&makeParents=maybe", 0, false, "makeParents"},
		{"mode=0644", 0, false, "path"},
	} {
		r := httptest.NewRequest("PUT", "/v1/sandboxes/s/files/content?"+tc.query, nil)
		h, err := uploadHeader(r, map[string]string{"name": "s"})
		if tc.errPart != "" {
			if err == nil || status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("%s: err %v, want INVALID_ARGUMENT about %s", tc.query, err, tc.errPart)
			}
			continue
		}
		if err != nil || h.GetMode() != tc.mode || h.GetMakeParents() != tc.parents || h.GetSandbox() != "s" {
			t.Errorf("%s: %v, %v", tc.query, h, err)
		}
	}
}

// TestOpenAPIHasTheHandWrittenRoutes: the served document is the generated
// one plus the routes written in this package, under both prefixes.
func TestOpenAPIHasTheHandWrittenRoutes(t *testing.T) {
	doc, err := openAPI(gateway.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths       map[string]map[string]any
		Definitions map[string]struct{ Properties map[string]any }
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/sandboxes/{name}:exec", "/v1/namespaces/{namespace}/sandboxes/{name}/files/content", "/v1/sandboxes:claim"} {
		if d.Paths[p] == nil {
			t.Errorf("no path %s", p)
		}
	}
	for _, m := range []string{"get", "put"} {
		if d.Paths["/v1/sandboxes/{name}/files/content"][m] == nil {
			t.Errorf("files/content has no %s", m)
		}
	}
	if d.Definitions["Status"].Properties["reason"] == nil {
		t.Error("Status has no reason")
	}
}

func TestCheckBrowser(t *testing.T) {
	for _, tc := range []struct {
		name    string
		open    bool
		allowed []string
		method  string
		host    string
		origin  string
		preflt  bool
		pass    bool
		code    int
	}{
		{"curl to 127.0.0.1", true, nil, "POST", "127.0.0.1:50052", "", false, true, 0},
		{"curl to localhost", true, nil, "GET", "localhost:50052", "", false, true, 0},
		{"curl to [::1]", true, nil, "GET", "[::1]:50052", "", false, true, 0},
		{"DNS rebinding, open server", true, nil, "GET", "evil.example:50052", "", false, false, 403},
		{"a name, server with tokens", false, nil, "GET", "sandpod-bridge.sandpod-system:50052", "", false, true, 0},
		{"a page's POST, open server", true, nil, "POST", "127.0.0.1:50052", "https://evil.example", false, false, 403},
		{"a page's POST, server with tokens", false, nil, "POST", "bridge:50052", "https://evil.example", false, false, 403},
		{"an allowed page", false, []string{"https://app.example"}, "POST", "bridge:50052", "https://app.example", false, true, 0},
		{"any page allowed", true, []string{"*"}, "GET", "127.0.0.1:50052", "https://app.example", false, true, 0},
		{"preflight of an allowed page", false, []string{"https://app.example"}, "OPTIONS", "bridge:50052", "https://app.example", true, false, 204},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{opts: Options{Open: tc.open, AllowedOrigins: tc.allowed}}
			r := httptest.NewRequest(tc.method, "/v1/sandboxes", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.preflt {
				r.Header.Set("Access-Control-Request-Method", "POST")
			}
			w := httptest.NewRecorder()
			if got := s.checkBrowser(w, r); got != tc.pass {
				t.Fatalf("pass = %v, want %v (%d %s)", got, tc.pass, w.Code, w.Body)
			}
			if !tc.pass && w.Code != tc.code {
				t.Fatalf("HTTP %d, want %d", w.Code, tc.code)
			}
			if w.Code == http.StatusForbidden {
				want := errinfo.ReasonOriginNotAllowed
				if tc.origin == "" {
					want = errinfo.ReasonHostNotAllowed
				}
				if !strings.Contains(w.Body.String(), `"reason":"`+string(want)+`"`) {
					t.Errorf("403 body %s, want reason %s", w.Body, want)
				}
			}
			if tc.pass && tc.origin != "" && w.Header().Get("Access-Control-Allow-Origin") != tc.origin {
				t.Errorf("no CORS header for an allowed origin: %v", w.Header())
			}
		})
	}
}
