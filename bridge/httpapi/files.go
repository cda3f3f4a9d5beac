package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// uploadChunk is the size of the WriteFile messages an upload is cut into.
const uploadChunk = 256 << 10

// download is GET /v1/sandboxes/{name}/files/content?path=P[&offset=&length=]:
// ReadFile as the file's bytes (application/octet-stream) rather than
// NDJSON of base64 chunks. An error before the first byte is a JSON error
// with its status; one after it (rare: the sandbox went away mid-read)
// aborts the response, so a client sees a failed transfer, never a short
// file passed off as whole.
func (s *Server) download(w http.ResponseWriter, r *http.Request, params map[string]string) {
	req := &sandpodv1.ReadFileRequest{}
	if err := queryInto(req, r.URL.Query()); err != nil {
		writeError(w, r, err)
		return
	}
	req.Sandbox = params["name"]
	if ns, ok := params["namespace"]; ok {
		req.Namespace = ns
	}
	ctx, err := runtime.AnnotateContext(r.Context(), s.mux, r, "/sandpod.v1.SandboxService/ReadFile")
	if err != nil {
		writeError(w, r, err)
		return
	}
	stream, err := s.client.ReadFile(ctx, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	for started := false; ; started = true {
		msg, err := stream.Recv()
		if err != nil && !errors.Is(err, io.EOF) {
			if !started {
				writeError(w, r, err)
				return
			}
			panic(http.ErrAbortHandler)
		}
		if !started {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
		}
		if err != nil { // io.EOF: the whole file went out
			return
		}
		if _, err := w.Write(msg.GetData()); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

// upload is PUT /v1/sandboxes/{name}/files/content?path=P[&mode=0644&makeParents=true]:
// WriteFile with the request body as the file, streamed (never held whole
// in memory) and capped at MaxUploadBytes (413 over it, and the file is
// left as it was: it appears only when the whole body has arrived).
// mode is octal, as chmod takes it. The answer is the WriteFileResponse.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, params map[string]string) {
	h, err := uploadHeader(r, params)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx, err := runtime.AnnotateContext(r.Context(), s.mux, r, "/sandpod.v1.SandboxService/WriteFile")
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.client.WriteFile(ctx)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// closeAndAnswer ends the upload and answers with its outcome.
	closeAndAnswer := func() {
		resp, err := stream.CloseAndRecv()
		if err != nil {
			writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(mustJSON(resp), '\n'))
	}
	if err := stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Header{Header: h}}); err != nil {
		closeAndAnswer() // the server refused: its status says why
		return
	}
	buf := make([]byte, uploadChunk)
	for {
		n, rerr := io.ReadFull(r.Body, buf)
		if n > 0 {
			data := append([]byte(nil), buf[:n]...)
			if err := stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: data}}); err != nil {
				closeAndAnswer()
				return
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			// Over the limit, or the caller went away: abort the write (the
			// old file stays) and say why.
			cancel()
			writeError(w, r, errinfo.Newf(codes.Canceled, errinfo.ReasonUploadInterrupted, "the upload was cut short: %v", rerr))
			return
		}
	}
	closeAndAnswer()
}

func uploadHeader(r *http.Request, params map[string]string) (*sandpodv1.WriteFileHeader, error) {
	q := r.URL.Query()
	h := &sandpodv1.WriteFileHeader{Sandbox: params["name"], Namespace: q.Get("namespace"), Path: q.Get("path")}
	if ns, ok := params["namespace"]; ok {
		h.Namespace = ns
	}
	if h.Path == "" {
		return nil, errinfo.Invalid(errinfo.ReasonInvalidPath, "path", "give the file's path in the query, e.g. ?path=notes/a.txt")
	}
	if v := q.Get("mode"); v != "" {
		mode, err := strconv.ParseUint(v, 8, 32)
		if err != nil || mode > 0o7777 {
			return nil, errinfo.Invalid(errinfo.ReasonInvalidValue, "mode", "want octal permission bits such as 0644, got %q", v)
		}
		h.Mode = uint32(mode)
	}
	for _, key := range []string{"makeParents", "make_parents"} {
		if v := q.Get(key); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, errinfo.Invalid(errinfo.ReasonInvalidValue, key, "want true or false, got %q", v)
			}
			h.MakeParents = b
		}
	}
	return h, nil
}

func mustJSON(m interface{ ProtoReflect() protoreflect.Message }) []byte {
	b, err := jsonOut.Marshal(m)
	if err != nil {
		return streamError(errinfo.Newf(codes.Internal, errinfo.ReasonResponseEncodeFailed, "encode the answer: %v", err))
	}
	return b
}
