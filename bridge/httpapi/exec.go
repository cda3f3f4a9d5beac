package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// stdinChunk is the largest stdin message: the smallest stdin window a
// server may give (ExecStarted.stdin_window), so no message overruns it.
const stdinChunk = 64 << 10

// jsonOut writes response messages as proto3 JSON, every field present.
var jsonOut = protojson.MarshalOptions{EmitUnpopulated: true}

// exec is POST /v1/sandboxes/{name}:exec: the bidirectional Exec as one
// HTTP exchange (docs/http.md). The command comes either from the query
// (argv=..&argv=.. or shell=..., with ExecStart's other fields), and then
// the request body is the command's standard input, streamed; or, without
// argv and shell in the query, from a JSON ExecStart body, and the command
// gets an empty standard input. The answer streams the ExecResponse
// messages (started, stdout, stderr, exit; stdin_acked is flow control of
// the gRPC form and left out) as NDJSON: {"result": {...}} a line.
func (s *Server) exec(w http.ResponseWriter, r *http.Request, params map[string]string) {
	start, withStdin, err := s.execStart(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	start.Sandbox = params["name"]
	if ns, ok := params["namespace"]; ok {
		start.Namespace = ns
	}
	ctx, err := runtime.AnnotateContext(r.Context(), s.mux, r, "/sandpod.v1.SandboxService/Exec")
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.client.Exec(ctx)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}}); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, r, err)
		return
	}
	if withStdin {
		go pumpStdin(r.Body, stream, cancel)
	} else {
		_ = stream.CloseSend()
	}
	started := false
	rc := http.NewResponseController(w)
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if !started {
				writeError(w, r, err)
				return
			}
			if lb := limitOf(r); lb != nil && lb.exceeded.Load() {
				err = status.FromProto(tooLarge(lb.limit)).Err()
			}
			_, _ = w.Write(streamError(err))
			return
		}
		if msg.GetStdinAcked() != 0 {
			continue
		}
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
		}
		if _, err := w.Write(resultLine(msg)); err != nil {
			return // the caller went away: cancel kills the command
		}
		_ = rc.Flush()
	}
}

// resultLine is one NDJSON line of a streamed answer.
func resultLine(m proto.Message) []byte {
	body, err := jsonOut.Marshal(m)
	if err != nil {
		return streamError(errinfo.Newf(codes.Internal, errinfo.ReasonResponseEncodeFailed, "encode %T: %v", m, err))
	}
	out := make([]byte, 0, len(body)+12)
	out = append(out, `{"result":`...)
	out = append(out, body...)
	return append(out, "}\n"...)
}

// execStart reads the command of an exec request, and says whether the
// request body is its standard input.
func (s *Server) execStart(r *http.Request) (*sandpodv1.ExecStart, bool, error) {
	q := r.URL.Query()
	start := &sandpodv1.ExecStart{}
	if q.Has("argv") || q.Has("shell") {
		if err := queryInto(start, q); err != nil {
			return nil, false, err
		}
		return start, true, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, false, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidBody, "read the request body: %v", err)
	}
	if int64(len(body)) > s.opts.MaxBodyBytes {
		return nil, false, status.FromProto(tooLarge(s.opts.MaxBodyBytes)).Err()
	}
	if len(body) == 0 {
		return nil, false, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidCommand,
			"give the command: a JSON body such as {\"shell\": \"echo hi\"} or {\"argv\": [\"ls\", \"-l\"]}, or argv=/shell= in the query with standard input as the body")
	}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, start); err != nil {
		return nil, false, errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidBody, "the body is not a JSON ExecStart: %v", err)
	}
	// Query fields (namespace, timeout...) may complete a JSON body.
	if err := queryInto(start, q); err != nil {
		return nil, false, err
	}
	return start, false, nil
}

// queryInto sets fields of m from query parameters, by their proto or
// JSON names (grpc-gateway's rules: repeated fields repeat, maps as
// env[KEY]=VALUE).
func queryInto(m proto.Message, q url.Values) error {
	if err := runtime.PopulateQueryParameters(m, q, utilities.NewDoubleArray(nil)); err != nil {
		return errinfo.Newf(codes.InvalidArgument, errinfo.ReasonInvalidQuery, "query: %v", err)
	}
	return nil
}

// pumpStdin streams body to the command's standard input in messages of
// at most stdinChunk bytes, then half-closes (EOF for the command). A body
// that cannot be read to its end (the caller went away, or it is over the
// limit) kills the command rather than letting it read a cut input as if
// it were whole.
func pumpStdin(body io.Reader, stream sandpodv1.SandboxService_ExecClient, cancel context.CancelFunc) {
	buf := make([]byte, stdinChunk)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if serr := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: data}}); serr != nil {
				return // the command has ended; Recv tells how
			}
		}
		if errors.Is(err, io.EOF) {
			_ = stream.CloseSend()
			return
		}
		if err != nil {
			cancel()
			return
		}
	}
}
