package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// errorBody is the JSON of every error, always under "error" ({"error":
// {...}}) whether it is the whole answer or the last line of a stream:
// google.rpc.Status as grpc-gateway writes it (code, message, details),
// plus the code's name and the ErrorInfo reason, so that a caller needs
// neither a table of numbers nor to dig in details.
type errorBody struct {
	// Code is the gRPC code number (5), Status its name ("NOT_FOUND").
	Code    int32             `json:"code"`
	Status  string            `json:"status"`
	Message string            `json:"message"`
	Reason  string            `json:"reason,omitempty"`
	Details []json.RawMessage `json:"details"`
}

// newErrorBody describes st.
func newErrorBody(st *spb.Status) errorBody {
	name, ok := code.Code_name[st.GetCode()]
	if !ok {
		name = "UNKNOWN"
	}
	b := errorBody{Code: st.GetCode(), Status: name, Message: st.GetMessage(), Details: []json.RawMessage{}}
	for _, d := range st.GetDetails() {
		raw, err := protojson.Marshal(d)
		if err != nil {
			continue // a detail of a type this binary does not know
		}
		b.Details = append(b.Details, raw)
		if b.Reason == "" {
			var info errdetails.ErrorInfo
			if d.UnmarshalTo(&info) == nil {
				b.Reason = info.GetReason()
			}
		}
	}
	return b
}

// httpStatus is the HTTP status of a gRPC code: grpc-gateway's table
// (NOT_FOUND 404, INVALID_ARGUMENT and FAILED_PRECONDITION 400,
// ALREADY_EXISTS and ABORTED 409, RESOURCE_EXHAUSTED 429, UNAVAILABLE 503,
// DEADLINE_EXCEEDED 504, ...), except a body over its limit: 413.
func httpStatus(st *spb.Status) int {
	if st.GetCode() == int32(codes.ResourceExhausted) && reasonOf(st) == errinfo.ReasonRequestTooLarge {
		return http.StatusRequestEntityTooLarge
	}
	return runtime.HTTPStatusFromCode(codes.Code(st.GetCode()))
}

func reasonOf(st *spb.Status) errinfo.Why {
	return errinfo.Reason(status.FromProto(st).Err())
}

// tooLarge is the status of a body over limit bytes.
func tooLarge(limit int64) *spb.Status {
	err := errinfo.New(codes.ResourceExhausted, errinfo.ReasonRequestTooLarge, map[string]string{"limit": fmt.Sprint(limit)},
		fmt.Sprintf("the request body is larger than this route's limit of %d bytes", limit))
	return status.Convert(err).Proto()
}

// writeError answers a request with err as JSON and its HTTP status.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := 0
	var he *runtime.HTTPStatusError
	if errors.As(err, &he) {
		code, err = he.HTTPStatus, he.Err
	}
	st := status.Convert(err).Proto()
	if lb := limitOf(r); lb != nil && lb.exceeded.Load() {
		// Whatever the decoder made of a cut body, the cause is its size.
		st, code = tooLarge(lb.limit), 0
	}
	if code == 0 {
		code = httpStatus(st)
	}
	writeStatus(w, st, code)
}

func writeStatus(w http.ResponseWriter, st *spb.Status, httpCode int) {
	buf, err := json.Marshal(map[string]errorBody{"error": newErrorBody(st)})
	if err != nil {
		buf = []byte(`{"error":{"code":13,"status":"INTERNAL","message":"error body could not be encoded","details":[]}}`)
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if st.GetCode() == int32(codes.Unauthenticated) {
		h.Set("WWW-Authenticate", `Bearer realm="sandpod"`)
	}
	w.WriteHeader(httpCode)
	_, _ = w.Write(append(buf, '\n'))
}

// errorHandler is the gateway's runtime.ErrorHandlerFunc.
func errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, err)
}

// routingErrorHandler answers a path or method the API does not have with
// the same JSON, keeping the HTTP status (404, 405) the router chose.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpCode int) {
	c := codes.InvalidArgument
	switch httpCode {
	case http.StatusNotFound:
		c = codes.NotFound
	case http.StatusMethodNotAllowed:
		c = codes.Unimplemented
	}
	msg := fmt.Sprintf("no route %s %s: the routes are listed in /openapi.json", r.Method, r.URL.Path)
	writeStatus(w, status.Convert(errinfo.New(c, errinfo.ReasonRouteNotFound, nil, msg)).Proto(), httpCode)
}

// streamError is the last line of a streamed answer that ends in an error
// (the status line has gone out already): {"error": {...}} as grpc-gateway
// writes it, and as every other error is written.
func streamError(err error) []byte {
	buf, _ := json.Marshal(map[string]errorBody{"error": newErrorBody(status.Convert(err).Proto())})
	return append(buf, '\n')
}

// marshaler is grpc-gateway's JSON marshaler with two changes: streams are
// served as application/x-ndjson (a JSON document a line), and the error
// line that ends a failed stream carries the same fields as other errors.
type marshaler struct{ *runtime.JSONPb }

func newMarshaler() *marshaler {
	return &marshaler{&runtime.JSONPb{
		MarshalOptions: protojson.MarshalOptions{EmitUnpopulated: true},
		// An unknown field is a mistake the caller wants to hear about
		// (a misspelt "ttl" would silently claim with the default).
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

func (m *marshaler) StreamContentType(any) string { return "application/x-ndjson" }

func (m *marshaler) Marshal(v any) ([]byte, error) {
	if chunk, ok := v.(map[string]proto.Message); ok {
		if st, ok := chunk["error"].(*spb.Status); ok && len(chunk) == 1 {
			return json.Marshal(map[string]errorBody{"error": newErrorBody(st)})
		}
	}
	return m.JSONPb.Marshal(v)
}

// limitedBody caps a request body at limit bytes and remembers whether a
// read went past it, so that the error it causes (wherever it surfaces:
// a JSON decoder, a stream) is answered 413.
type limitedBody struct {
	rc       io.ReadCloser // an http.MaxBytesReader
	limit    int64
	exceeded atomic.Bool
}

func (l *limitedBody) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		l.exceeded.Store(true)
	}
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }

type limitKey struct{}

func limitOf(r *http.Request) *limitedBody {
	lb, _ := r.Context().Value(limitKey{}).(*limitedBody)
	return lb
}

// withLimit caps the body of r at limit bytes: a request that says it is
// larger (Content-Length) is answered 413 at once, one that turns out
// larger when read gets 413 from writeError.
func withLimit(w http.ResponseWriter, r *http.Request, limit int64) (*http.Request, bool) {
	if r.ContentLength > limit {
		refuseAnnounced(w, r, limit)
		return nil, false
	}
	lb := &limitedBody{rc: http.MaxBytesReader(w, r.Body, limit), limit: limit}
	r = r.WithContext(context.WithValue(r.Context(), limitKey{}, lb))
	r.Body = lb
	return r, true
}

// Lingering after a refused body: how much of it is read and dropped, and
// for how long, after the 413 is written.
const (
	lingerBytes = 8 << 20
	lingerFor   = 2 * time.Second
)

// refuseAnnounced answers 413 to a request whose Content-Length is over
// limit, then reads and drops what the client goes on sending (up to
// lingerBytes, for at most lingerFor), as a web server's lingering close
// does: a connection closed with request bytes unread is reset, and the
// reset can reach the client before it has read the 413. A client that
// asked first (Expect: 100-continue) is sent nothing to wait for.
func refuseAnnounced(w http.ResponseWriter, r *http.Request, limit int64) {
	rc := http.NewResponseController(w)
	linger := r.Header.Get("Expect") == "" && rc.EnableFullDuplex() == nil
	writeStatus(w, tooLarge(limit), http.StatusRequestEntityTooLarge)
	if !linger {
		return
	}
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now().Add(lingerFor))
	_, _ = io.CopyN(io.Discard, r.Body, min(r.ContentLength, lingerBytes))
}
