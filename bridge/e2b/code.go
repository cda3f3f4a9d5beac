package e2b

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// codeInterpreter serves E2B's code interpreter (port 49999) over
// sandpod's RunCode and code contexts.
func (s *Server) codeInterpreter(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && p == "/execute":
		s.execute(w, r)
	case r.Method == http.MethodPost && p == "/contexts":
		s.createContext(w, r)
	case r.Method == http.MethodGet && p == "/contexts":
		s.listContexts(w, r)
	case r.Method == http.MethodDelete && strings.HasPrefix(p, "/contexts/"):
		s.deleteContext(w, r, strings.TrimPrefix(p, "/contexts/"))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/contexts/") && strings.HasSuffix(p, "/restart"):
		s.restartContext(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/contexts/"), "/restart"))
	case r.Method == http.MethodGet && p == "/health":
		s.health(w, r)
	default:
		writeError(w, http.StatusNotImplemented, "code interpreter route "+r.Method+" "+p+" is not supported by sandpod")
	}
}

// mimeKeys are the fields of E2B's Result for the MIME types of a
// Jupyter bundle; binary ones are base64, JSON is an object.
var mimeKeys = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
}

var binaryMIME = map[string]bool{"image/png": true, "image/jpeg": true, "application/pdf": true}

// resultLine is a sandpod result as the code interpreter's "result" line;
// MIME types E2B has no field for go under "extra".
func resultLine(res *sandpodv1.CodeResult) map[string]any {
	line := map[string]any{"type": "result", "is_main_result": res.GetIsMainResult()}
	extra := map[string]any{}
	for mt, v := range res.GetData() {
		key, ok := mimeKeys[mt]
		switch {
		case binaryMIME[mt]:
			line[key] = base64.StdEncoding.EncodeToString(v)
		case mt == "application/json":
			var obj any
			if json.Unmarshal(v, &obj) == nil {
				line[key] = obj
			}
		case ok:
			line[key] = string(v)
		default:
			extra[mt] = string(v)
		}
	}
	if len(extra) > 0 {
		line["extra"] = extra
	}
	return line
}

// execLine is one line of /execute's answer for a RunCode message (nil
// for none).
func execLine(res *sandpodv1.RunCodeResponse, now time.Time) map[string]any {
	ts := now.UnixNano()
	switch m := res.GetMsg().(type) {
	case *sandpodv1.RunCodeResponse_Stdout:
		return map[string]any{"type": "stdout", "text": string(m.Stdout), "timestamp": ts}
	case *sandpodv1.RunCodeResponse_Stderr:
		return map[string]any{"type": "stderr", "text": string(m.Stderr), "timestamp": ts}
	case *sandpodv1.RunCodeResponse_Result:
		return resultLine(m.Result)
	case *sandpodv1.RunCodeResponse_Error:
		return map[string]any{"type": "error", "name": m.Error.GetName(), "value": m.Error.GetValue(), "traceback": m.Error.GetTraceback()}
	case *sandpodv1.RunCodeResponse_Done:
		return map[string]any{"type": "number_of_executions", "execution_count": m.Done.GetExecutionCount()}
	}
	return nil
}

// execute is POST /execute: the cell's output, results and error as JSON
// lines, streamed as they come.
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Code      string            `json:"code"`
		ContextID *string           `json:"context_id"`
		Language  *string           `json:"language"`
		EnvVars   map[string]string `json:"env_vars"`
	}
	if !decode(w, r, &b) {
		return
	}
	ns, name, _ := s.sandbox(r.Header)
	req := &sandpodv1.RunCodeRequest{Sandbox: name, Namespace: ns, Code: b.Code, Env: b.EnvVars}
	if b.ContextID != nil {
		req.ContextId = *b.ContextID
	}
	if b.Language != nil {
		req.Language = *b.Language
	}
	stream, err := s.api.RunCode(withToken(r.Context(), r.Header), req)
	var first *sandpodv1.RunCodeResponse
	if err == nil {
		first, err = stream.Recv()
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flush := http.NewResponseController(w)
	var lines lineBuffer
	emit := func(line map[string]any) bool {
		if enc.Encode(line) != nil {
			return false
		}
		_ = flush.Flush()
		return true
	}
	for res := first; ; {
		for _, line := range lines.add(res, s.now()) {
			if !emit(line) {
				return
			}
		}
		if res.GetDone() != nil {
			return
		}
		if res, err = stream.Recv(); err != nil {
			msg := "the execution's stream ended: " + err.Error()
			emit(map[string]any{"type": "error", "name": "SandpodError", "value": msg, "traceback": msg})
			return
		}
	}
}

// lineBuffer joins a cell's stdout and stderr pieces into whole lines, as
// Jupyter's kernel sends its stream output (print("a") is one "a\n", not
// "a" and "\n"): a partial line waits for its end, for the other stream,
// or for the cell's end, which send it first. A result does not: the agent
// reads output and results from two pipes, so the rest of a line may come
// after a result the cell produced later.
type lineBuffer struct {
	kind string // "stdout" or "stderr": what buf holds
	buf  []byte
}

func (l *lineBuffer) add(res *sandpodv1.RunCodeResponse, now time.Time) []map[string]any {
	var out []map[string]any
	kind, data := "", []byte(nil)
	switch m := res.GetMsg().(type) {
	case *sandpodv1.RunCodeResponse_Stdout:
		kind, data = "stdout", m.Stdout
	case *sandpodv1.RunCodeResponse_Stderr:
		kind, data = "stderr", m.Stderr
	}
	if len(l.buf) > 0 && ((kind != "" && kind != l.kind) || res.GetDone() != nil) {
		out = append(out, map[string]any{"type": l.kind, "text": string(l.buf), "timestamp": now.UnixNano()})
		l.buf = nil
	}
	if kind == "" {
		if line := execLine(res, now); line != nil {
			out = append(out, line)
		}
		return out
	}
	l.kind, l.buf = kind, append(l.buf, data...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		out = append(out, map[string]any{"type": kind, "text": string(l.buf[:i+1]), "timestamp": now.UnixNano()})
		l.buf = append([]byte(nil), l.buf[i+1:]...)
	}
	return out
}

// contextJSON is E2B's Context.
type contextJSON struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func contextOf(c *sandpodv1.CodeContext) contextJSON {
	return contextJSON{ID: c.GetId(), Language: c.GetLanguage(), Cwd: toE2BPath(c.GetCwd())}
}

func (s *Server) createContext(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	if !decode(w, r, &b) {
		return
	}
	ns, name, _ := s.sandbox(r.Header)
	res, err := s.api.CreateCodeContext(withToken(r.Context(), r.Header), &sandpodv1.CreateCodeContextRequest{
		Sandbox: name, Namespace: ns, Language: b.Language, Cwd: toSandpodPath(b.Cwd),
	})
	if err != nil {
		writeStatus(w, err)
		return
	}
	writeJSON(w, http.StatusOK, contextOf(res.GetContext()))
}

func (s *Server) listContexts(w http.ResponseWriter, r *http.Request) {
	ns, name, _ := s.sandbox(r.Header)
	res, err := s.api.ListCodeContexts(withToken(r.Context(), r.Header), &sandpodv1.ListCodeContextsRequest{Sandbox: name, Namespace: ns})
	if err != nil {
		writeStatus(w, err)
		return
	}
	out := []contextJSON{}
	for _, c := range res.GetContexts() {
		out = append(out, contextOf(c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteContext(w http.ResponseWriter, r *http.Request, id string) {
	ns, name, _ := s.sandbox(r.Header)
	_, err := s.api.DeleteCodeContext(withToken(r.Context(), r.Header), &sandpodv1.DeleteCodeContextRequest{Sandbox: name, Namespace: ns, ContextId: id})
	if err != nil {
		writeStatus(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// restartContext starts the context afresh: deleted and made again with
// its id, language and working directory (sandpod has no restart call).
func (s *Server) restartContext(w http.ResponseWriter, r *http.Request, id string) {
	ns, name, _ := s.sandbox(r.Header)
	ctx := withToken(r.Context(), r.Header)
	res, err := s.api.ListCodeContexts(ctx, &sandpodv1.ListCodeContextsRequest{Sandbox: name, Namespace: ns})
	if err != nil {
		writeStatus(w, err)
		return
	}
	var c *sandpodv1.CodeContext
	for _, x := range res.GetContexts() {
		if x.GetId() == id {
			c = x
		}
	}
	if c == nil {
		writeError(w, http.StatusNotFound, "context "+id+" not found")
		return
	}
	if _, err := s.api.DeleteCodeContext(ctx, &sandpodv1.DeleteCodeContextRequest{Sandbox: name, Namespace: ns, ContextId: id}); err != nil {
		writeStatus(w, err)
		return
	}
	if id != "default" {
		if _, err := s.api.CreateCodeContext(ctx, &sandpodv1.CreateCodeContextRequest{Sandbox: name, Namespace: ns, ContextId: id, Language: c.GetLanguage(), Cwd: c.GetCwd()}); err != nil {
			writeStatus(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
