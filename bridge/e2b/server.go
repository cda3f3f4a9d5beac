// Package e2b serves an E2B-compatible API (docs/e2b.md) in front of
// sandpod's own: the control API that E2B's SDK reaches at E2B_API_URL
// (REST: create, connect, list, kill, timeout, pause) and, on the same
// listener, what it reaches at E2B_SANDBOX_URL with the headers
// E2b-Sandbox-Id and E2b-Sandbox-Port: envd (port 49983: Connect RPC
// process.Process and filesystem.Filesystem, HTTP /files) and the code
// interpreter (port 49999: /execute, /contexts).
//
// Like the HTTP gateway (bridge/httpapi) it calls the gRPC API through a
// client connection, in `sandpod serve` and `sandpod bridge` an in-process
// one: every request passes the same authentication, namespace checks,
// validation and limits as a gRPC call. The E2B API key (X-API-Key on the
// control API, X-Access-Token on the sandbox routes) travels as the bearer
// token.
package e2b

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem/filesystemconnect"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process/processconnect"
	"github.com/sandpod/sandpod/bridge/httpapi"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The ports E2B's SDK names in E2b-Sandbox-Port.
const (
	EnvdPort            = "49983"
	CodeInterpreterPort = "49999"
)

// Options configure the E2B front door.
type Options struct {
	// Namespace is where E2B's sandboxes live (E2B has no namespaces);
	// empty means "default".
	Namespace string
	// DefaultTemplate is the sandpod template that E2B's default template
	// names ("base", "code-interpreter-v1") stand for; empty: "python".
	DefaultTemplate string
	// Open says the gRPC server authenticates nobody: then the create
	// answer carries no envd access token.
	Open bool
	// MaxUploadBytes caps one upload to /files (0: 1 GiB).
	MaxUploadBytes int64
	// Streams counts a stream the caller of an API key holds open without
	// a gRPC stream behind it (following a running command), against the
	// same per-caller limit as the gRPC server's streams; release gives it
	// back. nil: not counted.
	Streams func(ctx context.Context, key string) (release func(), err error)
}

// Server is the E2B front door over one gRPC client connection.
type Server struct {
	api   sandpodv1.SandboxServiceClient
	opts  Options
	procs *processes
	watch *watchers
	ctl   http.Handler
	envd  http.Handler
	now   func() time.Time
}

// New builds the E2B front door over conn, a connection to the gRPC API.
func New(conn grpc.ClientConnInterface, o Options) *Server {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.DefaultTemplate == "" {
		o.DefaultTemplate = "python"
	}
	if o.MaxUploadBytes <= 0 {
		o.MaxUploadBytes = 1 << 30
	}
	s := &Server{api: sandpodv1.NewSandboxServiceClient(conn), opts: o, procs: newProcesses(), watch: newWatchers(), now: time.Now}
	s.ctl = s.controlRoutes()
	envd := http.NewServeMux()
	envd.Handle(processconnect.NewProcessHandler(processService{s}))
	envd.Handle(filesystemconnect.NewFilesystemHandler(filesystemService{s}))
	envd.HandleFunc("GET /files", s.download)
	envd.HandleFunc("POST /files", s.upload)
	envd.HandleFunc("GET /health", s.health)
	envd.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotImplemented, "envd route "+r.Method+" "+r.URL.Path+" is not supported by sandpod")
	})
	s.envd = envd
	return s
}

// ServeHTTP routes by E2b-Sandbox-Id: with it a request is for a sandbox
// (envd or the code interpreter, by E2b-Sandbox-Port), without it for the
// control API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg := s.browserRefusal(r); msg != "" {
		writeError(w, http.StatusForbidden, msg)
		return
	}
	if r.Header.Get("E2b-Sandbox-Id") == "" {
		s.ctl.ServeHTTP(w, r)
		return
	}
	switch port := r.Header.Get("E2b-Sandbox-Port"); port {
	case EnvdPort, "":
		// Input and output of a process flow together (StreamInput,
		// uploads while the answer begins).
		_ = http.NewResponseController(w).EnableFullDuplex()
		s.envd.ServeHTTP(w, r)
	case CodeInterpreterPort:
		s.codeInterpreter(w, r)
	default:
		writeError(w, http.StatusBadGateway, "port "+port+" of sandbox "+r.Header.Get("E2b-Sandbox-Id")+" is not served: sandpod's E2B front door reaches envd (49983) and the code interpreter (49999); use sandpod's ExposePort for other ports")
	}
}

// browserRefusal is why a request to a server without tokens is refused
// ("" when it is not): any web page the user opens can send requests to
// loopback. One from a page (it has an Origin) could create sandboxes
// without a preflight (a text/plain POST), and one to a name the page
// re-points at 127.0.0.1 (DNS rebinding) is same-origin to itself and
// could run commands and read files. With tokens a page has no key to
// send. The rules of the HTTP API (bridge/httpapi/origin.go), without its
// allowed origins: E2B's SDKs call from servers, not from web pages.
func (s *Server) browserRefusal(r *http.Request) string {
	if !s.opts.Open {
		return ""
	}
	if !httpapi.LocalHost(r.Host) {
		return "Host " + strconv.Quote(r.Host) + ": a server without tokens answers only requests to an IP address or localhost (a guard against DNS rebinding); give it --token-file to be reached by name"
	}
	if o := r.Header.Get("Origin"); o != "" {
		return "a request from a web page (Origin " + strconv.Quote(o) + ") is refused by a server without tokens; give it --token-file"
	}
	return ""
}

// withToken returns ctx with the caller's API key as the bearer token of
// the gRPC calls made for it: X-API-Key (the control API), else
// X-Access-Token or E2B-Traffic-Access-Token (the sandbox routes, where
// the SDK sends the tokens the create answer carried, which are that key).
func withToken(ctx context.Context, h http.Header) context.Context {
	key := apiKey(h)
	if key == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

// apiKey is the caller's API key, from the first header that has one.
func apiKey(h http.Header) string {
	key := strings.TrimSpace(h.Get("X-API-Key"))
	if key == "" {
		key = strings.TrimSpace(h.Get("X-Access-Token"))
	}
	if key == "" {
		// The code interpreter's context calls send only this one.
		key = strings.TrimSpace(h.Get("E2B-Traffic-Access-Token"))
	}
	if key == "" {
		if a, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
			key = strings.TrimSpace(a)
		}
	}
	return key
}
