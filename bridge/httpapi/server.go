// Package httpapi serves sandpod's API as HTTP/JSON (docs/http.md): the
// routes grpc-gateway generates from the google.api.http options of
// sandpod.v1 (proto/sandpod/v1/gateway), every RPC without one at
// POST /sandpod.v1.SandboxService/<Method>, a few routes written here for
// what JSON does badly (exec as one POST, files as plain bytes), and the
// OpenAPI document at /openapi.json.
//
// It calls the gRPC API through a client connection (in `sandpod serve`
// and `sandpod bridge`, an in-process one), so every request passes the
// same validation and the same authentication as a gRPC call: the
// Authorization header travels as gRPC metadata.
package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/proto/sandpod/v1/gateway"
)

const (
	// DefaultMaxBodyBytes caps a JSON request body: the gRPC server takes
	// messages up to 8 MiB, and JSON is never smaller than the message.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultMaxUploadBytes caps one upload (PUT .../files/content, the
	// streamed WriteFile and Exec routes): 1 GiB.
	DefaultMaxUploadBytes = 1 << 30
)

// Options configure the HTTP API.
type Options struct {
	// MaxBodyBytes caps JSON request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxUploadBytes caps the body of an upload or of an exec's standard
	// input (0: DefaultMaxUploadBytes).
	MaxUploadBytes int64
	// Open says the gRPC server authenticates nobody: then only requests
	// to an IP address or localhost are answered (origin.go).
	Open bool
	// AllowedOrigins are the web origins (scheme://host[:port], or "*")
	// whose pages may call the API, with CORS; others are refused.
	AllowedOrigins []string
}

// Server is the HTTP API over one gRPC client connection.
type Server struct {
	mux    *runtime.ServeMux
	client sandpodv1.SandboxServiceClient
	opts   Options
	doc    []byte
}

// New builds the HTTP API over conn, a connection to the gRPC API.
func New(ctx context.Context, conn grpc.ClientConnInterface, o Options) (*Server, error) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxUploadBytes <= 0 {
		o.MaxUploadBytes = DefaultMaxUploadBytes
	}
	doc, err := openAPI(gateway.OpenAPI)
	if err != nil {
		return nil, err
	}
	m := newMarshaler()
	s := &Server{
		mux: runtime.NewServeMux(
			runtime.WithMarshalerOption(runtime.MIMEWildcard, m),
			runtime.WithErrorHandler(errorHandler),
			runtime.WithRoutingErrorHandler(routingErrorHandler),
			runtime.WithForwardResponseOption(streamHeadersAtOnce),
		),
		client: sandpodv1.NewSandboxServiceClient(conn),
		opts:   o,
		doc:    doc,
	}
	if err := gateway.RegisterSandboxServiceHandlerClient(ctx, s.mux, s.client); err != nil {
		return nil, err
	}
	for _, prefix := range []string{"/v1", "/v1/namespaces/{namespace}"} {
		routes := []struct {
			method, path string
			h            runtime.HandlerFunc
		}{
			{"POST", prefix + "/sandboxes/{name}:exec", s.exec},
			{"GET", prefix + "/sandboxes/{name}/files/content", s.download},
			{"PUT", prefix + "/sandboxes/{name}/files/content", s.upload},
		}
		for _, rt := range routes {
			if err := s.mux.HandlePath(rt.method, rt.path, rt.h); err != nil {
				return nil, err
			}
		}
	}
	if err := s.mux.HandlePath("GET", "/openapi.json", s.openAPI); err != nil {
		return nil, err
	}
	return s, nil
}

// ServeHTTP refuses web pages it does not know (origin.go), caps the request body (uploads and exec input at
// MaxUploadBytes, everything else at MaxBodyBytes) and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.checkBrowser(w, r) {
		return
	}
	limit := s.opts.MaxBodyBytes
	if isUpload(r) {
		limit = s.opts.MaxUploadBytes
		// An HTTP/1.1 server stops reading a request once its answer has
		// begun, unless told otherwise: here input and output flow
		// together (exec's stdin and output, the streamed gRPC forms).
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	r, ok := withLimit(w, r, limit)
	if !ok {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// isUpload tells the routes whose body is data, not one JSON message.
func isUpload(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPut && strings.HasSuffix(p, "/files/content"):
		return true
	case r.Method == http.MethodPost && strings.HasSuffix(p, ":exec"):
		return true
	case p == "/sandpod.v1.SandboxService/WriteFile", p == "/sandpod.v1.SandboxService/Exec":
		return true
	}
	return false
}

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.doc)
}

// streamHeadersAtOnce sends the status line of a server stream as soon as
// the gRPC server has sent its headers, rather than with the first message
// (grpc-gateway's way): a watch sends its headers when it is live, and a
// caller waiting for them then knows it misses no change made after that,
// as a gRPC caller does, even when no change comes for a long time.
// ForwardResponseStream calls it once with no message before streaming; a
// stream that failed before its headers has none, and keeps its error
// status.
func streamHeadersAtOnce(ctx context.Context, w http.ResponseWriter, m proto.Message) error {
	if m != nil {
		return nil
	}
	md, ok := runtime.ServerMetadataFromContext(ctx)
	if !ok || len(md.HeaderMD) == 0 {
		return nil
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	return http.NewResponseController(w).Flush()
}
