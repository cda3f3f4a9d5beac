package e2b

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// chunk is the size of one WriteFile data message.
const chunk = 1 << 20

// download is envd's GET /files?path=...: the file's bytes.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	ns, name, _ := s.sandbox(r.Header)
	p := r.URL.Query().Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "the path parameter is required")
		return
	}
	ctx := withToken(r.Context(), r.Header)
	stream, err := s.api.ReadFile(ctx, &sandpodv1.ReadFileRequest{Sandbox: name, Namespace: ns, Path: toSandpodPath(p)})
	if err != nil {
		writeStatus(w, err)
		return
	}
	// The first message tells a missing file from a present one before the
	// status line is sent.
	first, err := stream.Recv()
	if err != nil && err != io.EOF {
		writeStatus(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.WriteHeader(http.StatusOK)
	if first != nil {
		_, _ = w.Write(first.GetData())
	}
	for err == nil {
		var res *sandpodv1.ReadFileResponse
		if res, err = stream.Recv(); err == nil {
			if _, werr := w.Write(res.GetData()); werr != nil {
				return
			}
		}
	}
	if err != io.EOF {
		// Too late for a status: cut the answer short so that the client
		// sees an error rather than a truncated file.
		panic(http.ErrAbortHandler)
	}
}

// inflateLimit reads r up to limit bytes, then fails as
// http.MaxBytesReader does.
type inflateLimit struct {
	r           io.Reader
	left, limit int64
}

func (l *inflateLimit) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a larger one.
		var b [1]byte
		if n, err := l.r.Read(b[:]); n == 0 {
			return 0, err
		}
		return 0, &http.MaxBytesError{Limit: l.limit}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// writeInfo is envd's answer entry for a written file.
type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// upload is envd's POST /files: a multipart form of "file" parts (each
// named by its path, or by ?path= for one) or one application/octet-stream
// body for ?path=, optionally gzip-encoded.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-metadata-") {
			writeError(w, http.StatusNotImplemented, "file metadata (X-Metadata-* headers) is not supported by sandpod")
			return
		}
	}
	body := io.Reader(http.MaxBytesReader(w, r.Body, s.opts.MaxUploadBytes))
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "the gzip-encoded body is not valid gzip: "+err.Error())
			return
		}
		// The limit is on what is written: a small gzip body inflates a
		// thousandfold.
		body = &inflateLimit{r: zr, left: s.opts.MaxUploadBytes, limit: s.opts.MaxUploadBytes}
	}
	q := r.URL.Query().Get("path")
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var out []writeInfo
	if mt != "multipart/form-data" {
		if q == "" {
			writeError(w, http.StatusBadRequest, "the path parameter is required for an application/octet-stream upload")
			return
		}
		info, err := s.writeFile(r, q, body)
		if err != nil {
			s.writeUploadError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, []writeInfo{info})
		return
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "reading the multipart body: "+err.Error())
			return
		}
		if part.FormName() != "file" {
			continue
		}
		// The whole path: Part.FileName keeps only its last element.
		_, disp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		p := disp["filename"]
		if q != "" {
			p = q
		}
		if p == "" {
			writeError(w, http.StatusBadRequest, "a file part names no path (give ?path= or the part's filename)")
			return
		}
		info, err := s.writeFile(r, p, part)
		if err != nil {
			s.writeUploadError(w, err)
			return
		}
		out = append(out, info)
	}
	if len(out) == 0 {
		writeError(w, http.StatusBadRequest, "the multipart body holds no \"file\" part")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) writeUploadError(w http.ResponseWriter, err error) {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the upload is larger than the limit of %d bytes", mb.Limit))
		return
	}
	if _, ok := status.FromError(err); ok {
		writeStatus(w, err)
		return
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

// writeFile writes one file, making its parents, as envd does.
func (s *Server) writeFile(r *http.Request, p string, data io.Reader) (writeInfo, error) {
	ns, name, _ := s.sandbox(r.Header)
	sp := toSandpodPath(p)
	ctx := withToken(r.Context(), r.Header)
	stream, err := s.api.WriteFile(ctx)
	if err != nil {
		return writeInfo{}, err
	}
	hdr := &sandpodv1.WriteFileHeader{Sandbox: name, Namespace: ns, Path: sp, MakeParents: true}
	if err := stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Header{Header: hdr}}); err != nil {
		_, err = stream.CloseAndRecv()
		return writeInfo{}, err
	}
	buf := make([]byte, chunk)
	for {
		n, rerr := io.ReadFull(data, buf)
		if n > 0 {
			if err := stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: buf[:n]}}); err != nil {
				_, err = stream.CloseAndRecv()
				return writeInfo{}, err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return writeInfo{}, rerr
		}
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		return writeInfo{}, err
	}
	e2bPath := toE2BPath(sp)
	return writeInfo{Name: path.Base(e2bPath), Type: "file", Path: e2bPath}, nil
}

// health is envd's GET /health: 204 while the sandbox runs, 502 (what
// E2B's proxy answers for a sandbox that is gone) otherwise.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ns, name, _ := s.sandbox(r.Header)
	res, err := s.api.GetSandbox(withToken(r.Context(), r.Header), &sandpodv1.GetSandboxRequest{Name: name, Namespace: ns})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			writeError(w, http.StatusBadGateway, "The sandbox "+name+" was not found")
			return
		}
		writeStatus(w, err)
		return
	}
	if res.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		writeError(w, http.StatusBadGateway, "The sandbox "+name+" is not running ("+res.GetSandbox().GetPhase().String()+")")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
