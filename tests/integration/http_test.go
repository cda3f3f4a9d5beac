package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// The HTTP/JSON API (docs/http.md) of the real binary, spoken as curl
// speaks it: net/http, JSON bodies, no generated client.

const httpUploadLimit = 1 << 20

// httpServer starts serve with --http-listen and returns its base URL.
func httpServer(t *testing.T, token string) string {
	t.Helper()
	url, _ := startHTTPServer(t, token)
	return url
}

func startHTTPServer(t *testing.T, token string) (string, *testserver.Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := testserver.Start(t, testserver.Options{Token: token, ExtraArgs: []string{
		"--http-listen", addr, "--http-max-upload", strconv.Itoa(httpUploadLimit)}})
	return "http://" + addr, srv
}

type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

// call sends one request (body: nil, []byte, string, io.Reader, or a
// value sent as JSON) and reads the whole answer.
func call(t *testing.T, method, url string, body any, headers ...string) httpAnswer {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	case io.Reader:
		r = b
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx(t), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, url, err)
	}
	return httpAnswer{resp.StatusCode, resp.Header, out}
}

// ok decodes a 200 answer's JSON into v.
func (a httpAnswer) ok(t *testing.T, v any) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", a.status, a.body)
	}
	if v != nil {
		if err := json.Unmarshal(a.body, v); err != nil {
			t.Fatalf("answer %q: %v", a.body, err)
		}
	}
}

type httpError struct {
	Code    int    `json:"code"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// wantError checks an error answer: its HTTP status, a JSON body
// {"error": {...}} with the gRPC code's name and number, a message, and the
// ErrorInfo reason.
func (a httpAnswer) wantError(t *testing.T, httpStatus int, grpcStatus, reason string) httpError {
	t.Helper()
	if a.status != httpStatus {
		t.Fatalf("HTTP %d, want %d: %s", a.status, httpStatus, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var wrapped struct{ Error *httpError }
	if err := json.Unmarshal(a.body, &wrapped); err != nil || wrapped.Error == nil {
		t.Fatalf("error body %q: %v", a.body, err)
	}
	e := *wrapped.Error
	if e.Status != grpcStatus || e.Reason != reason || e.Message == "" || e.Code == 0 {
		t.Fatalf("error %+v, want status %s, reason %q and a message", e, grpcStatus, reason)
	}
	return e
}

type execLine struct {
	Result *struct {
		Started *struct{ Pid int } `json:"started"`
		Stdout  []byte             `json:"stdout"`
		Stderr  []byte             `json:"stderr"`
		Exit    *struct {
			ExitCode int `json:"exitCode"`
		} `json:"exit"`
	} `json:"result"`
	Error *httpError `json:"error"`
}

type execOutput struct {
	stdout, stderr string
	exitCode       int
	exited         bool
}

// readExec reads an exec answer's NDJSON to its end.
func readExec(t *testing.T, body io.Reader) execOutput {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 8<<20)
	return readExecLines(t, sc)
}

func readExecLines(t *testing.T, sc *bufio.Scanner) execOutput {
	t.Helper()
	var out execOutput
	for sc.Scan() {
		var l execLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		switch {
		case l.Error != nil:
			t.Fatalf("exec failed: %+v", *l.Error)
		case l.Result.Exit != nil:
			out.exitCode, out.exited = l.Result.Exit.ExitCode, true
		default:
			out.stdout += string(l.Result.Stdout)
			out.stderr += string(l.Result.Stderr)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type httpSandbox struct {
	Sandbox struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Phase     string `json:"phase"`
	} `json:"sandbox"`
	Warm bool `json:"warm"`
}

func TestHTTPClaimGetListExecFiles(t *testing.T) {
	base := httpServer(t, "")

	var claimed httpSandbox
	call(t, "POST", base+"/v1/sandboxes:claim", map[string]any{"template": "python", "ttl": "600s", "labels": map[string]string{"via": "http"}}).ok(t, &claimed)
	name := claimed.Sandbox.Name
	if name == "" || claimed.Sandbox.Phase != "PHASE_RUNNING" {
		t.Fatalf("claimed %+v", claimed)
	}

	var got httpSandbox
	call(t, "GET", base+"/v1/namespaces/default/sandboxes/"+name, nil).ok(t, &got)
	if got.Sandbox.Name != name || got.Sandbox.Namespace != "default" {
		t.Fatalf("get: %+v", got)
	}
	var list struct{ Sandboxes []struct{ Name string } }
	call(t, "GET", base+"/v1/sandboxes?labelSelector=via%3Dhttp", nil).ok(t, &list)
	if len(list.Sandboxes) != 1 || list.Sandboxes[0].Name != name {
		t.Fatalf("list via=http: %+v", list)
	}

	t.Run("exec JSON", func(t *testing.T) {
		a := call(t, "POST", base+"/v1/sandboxes/"+name+":exec", map[string]any{"shell": "echo out; echo err >&2; exit 7"})
		if a.status != 200 || a.header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("HTTP %d %q: %s", a.status, a.header.Get("Content-Type"), a.body)
		}
		out := readExec(t, bytes.NewReader(a.body))
		if out.stdout != "out\n" || out.stderr != "err\n" || !out.exited || out.exitCode != 7 {
			t.Fatalf("exec: %+v", out)
		}
	})

	t.Run("exec with stdin from the body", func(t *testing.T) {
		stdin := bytes.Repeat([]byte("0123456789"), 30_000) // several stdin messages
		a := call(t, "POST", base+"/v1/sandboxes/"+name+":exec?argv=wc&argv=-c", stdin)
		a.ok(t, nil)
		if out := readExec(t, bytes.NewReader(a.body)); strings.TrimSpace(out.stdout) != "300000" || out.exitCode != 0 {
			t.Fatalf("wc -c: %+v", out)
		}
	})

	t.Run("exec output streams while stdin is open", func(t *testing.T) {
		// The command prints before it reads: its first line must arrive
		// while the request body is still open, then the input it reads.
		pr, pw := io.Pipe()
		req, _ := http.NewRequestWithContext(ctx(t), "POST", base+"/v1/sandboxes/"+name+":exec?shell="+
			"echo+ready%3B+read+x%3B+echo+got+%24x", pr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var sawReady bool
		for !sawReady && sc.Scan() {
			var l execLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Error != nil {
				t.Fatalf("line %q: %v", sc.Bytes(), err)
			}
			sawReady = string(l.Result.Stdout) == "ready\n"
		}
		if !sawReady {
			t.Fatal("no \"ready\" before stdin was closed")
		}
		fmt.Fprintln(pw, "hello")
		pw.Close()
		rest := readExecLines(t, sc)
		if rest.stdout != "got hello\n" || !rest.exited || rest.exitCode != 0 {
			t.Fatalf("after stdin: %+v", rest)
		}
	})

	t.Run("files as plain bytes", func(t *testing.T) {
		data := make([]byte, 700_000)
		_, _ = rand.Read(data)
		var written struct{ File struct{ Size string } }
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content?path=up/data.bin&makeParents=true&mode=0600", data).ok(t, &written)
		if written.File.Size != strconv.Itoa(len(data)) {
			t.Fatalf("written %+v", written)
		}
		a := call(t, "GET", base+"/v1/sandboxes/"+name+"/files/content?path=up/data.bin", nil)
		a.ok(t, nil)
		if !bytes.Equal(a.body, data) || a.header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("read back %d bytes (%q), want the %d written", len(a.body), a.header.Get("Content-Type"), len(data))
		}
		var st struct{ File struct{ Mode int } }
		call(t, "GET", base+"/v1/sandboxes/"+name+"/files:stat?path=up/data.bin", nil).ok(t, &st)
		if st.File.Mode != 0o600 {
			t.Fatalf("mode %o, want 600", st.File.Mode)
		}
		call(t, "GET", base+"/v1/sandboxes/"+name+"/files/content?path=up/missing", nil).
			wantError(t, 404, "NOT_FOUND", "FILE_NOT_FOUND")
	})

	t.Run("upload over the limit", func(t *testing.T) {
		// Announced (Content-Length) and found out while reading (chunked):
		// 413 each time, and no file. An announced body is refused before
		// it is read: a client that asks first (Expect: 100-continue, as
		// curl does for large bodies) never sends it, one that sends it
		// anyway still reads the 413 (the server drops what it sends
		// instead of resetting the connection under it).
		big := bytes.Repeat([]byte("x"), httpUploadLimit+1)
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content?path=big.bin", big, "Expect", "100-continue").
			wantError(t, 413, "RESOURCE_EXHAUSTED", "REQUEST_TOO_LARGE")
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content?path=big.bin", big).
			wantError(t, 413, "RESOURCE_EXHAUSTED", "REQUEST_TOO_LARGE")
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content?path=big.bin", io.MultiReader(bytes.NewReader(big)), "Expect", "100-continue").
			wantError(t, 413, "RESOURCE_EXHAUSTED", "REQUEST_TOO_LARGE")
		call(t, "GET", base+"/v1/sandboxes/"+name+"/files:stat?path=big.bin", nil).
			wantError(t, 404, "NOT_FOUND", "FILE_NOT_FOUND")
	})

	t.Run("bad input", func(t *testing.T) {
		e := call(t, "GET", base+"/v1/sandboxes/Bad_Name", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_NAME")
		if e.Code != 3 || !strings.Contains(e.Message, "name") {
			t.Errorf("bad name: %+v", e)
		}
		call(t, "POST", base+"/v1/sandboxes:claim", `{"template": "python", "tll": "60s"}`).
			wantError(t, 400, "INVALID_ARGUMENT", "")
		call(t, "POST", base+"/v1/sandboxes:claim", io.MultiReader(strings.NewReader(`{"template": "`), bytes.NewReader(bytes.Repeat([]byte("a"), 9<<20)))).
			wantError(t, 413, "RESOURCE_EXHAUSTED", "REQUEST_TOO_LARGE")
		call(t, "POST", base+"/v1/sandboxes/"+name+":exec", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_COMMAND")
		call(t, "POST", base+"/v1/sandboxes/"+name+":exec", "{not json").wantError(t, 400, "INVALID_ARGUMENT", "INVALID_BODY")
		call(t, "POST", base+"/v1/sandboxes/"+name+":exec?argv=true&timeout=soon", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_QUERY")
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_PATH")
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content?path=a&mode=9", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_VALUE")
		call(t, "PUT", base+"/v1/sandboxes/"+name+"/files/content?path=a&makeParents=maybe", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_VALUE")
		call(t, "GET", base+"/v1/no/such/route", nil).wantError(t, 404, "NOT_FOUND", "ROUTE_NOT_FOUND")
		// A web page (Origin) is refused unless allowed: no cross-site
		// request may claim or run commands on a server without tokens.
		call(t, "POST", base+"/v1/sandboxes:claim", `{"template": "python"}`, "Origin", "https://evil.example", "Content-Type", "text/plain").
			wantError(t, 403, "PERMISSION_DENIED", "ORIGIN_NOT_ALLOWED")
		// A stream refused before it starts keeps its status too.
		call(t, "GET", base+"/v1/sandboxes:watch?labelSelector=a%3D%3D%3Db", nil).wantError(t, 400, "INVALID_ARGUMENT", "INVALID_SELECTOR")
	})

	t.Run("watch", func(t *testing.T) {
		// The status line comes when the watch is live, before any event;
		// a change made after it arrives as an NDJSON line.
		req, _ := http.NewRequestWithContext(ctx(t), "GET", base+"/v1/sandboxes:watch?labelSelector=watched%3Dyes", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("watch: HTTP %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var c httpSandbox
		call(t, "POST", base+"/v1/sandboxes:claim", map[string]any{"template": "python", "labels": map[string]string{"watched": "yes"}}).ok(t, &c)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		if !sc.Scan() {
			t.Fatalf("watch ended: %v", sc.Err())
		}
		var ev struct {
			Result struct {
				Type    string
				Sandbox struct{ Name string }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Result.Sandbox.Name != c.Sandbox.Name {
			t.Fatalf("event %q (%v), want one about %s", sc.Bytes(), err, c.Sandbox.Name)
		}
		call(t, "DELETE", base+"/v1/sandboxes/"+c.Sandbox.Name, nil).ok(t, nil)
	})

	call(t, "DELETE", base+"/v1/sandboxes/"+name, nil).ok(t, nil)
	e := call(t, "GET", base+"/v1/sandboxes/"+name, nil).wantError(t, 404, "NOT_FOUND", "SANDBOX_NOT_FOUND")
	if e.Code != 5 {
		t.Errorf("code %d, want 5", e.Code)
	}
	call(t, "POST", base+"/v1/sandboxes/"+name+":exec", map[string]any{"argv": []string{"true"}}).
		wantError(t, 404, "NOT_FOUND", "SANDBOX_NOT_FOUND")
}

// TestHTTPOpenAPIListsEveryRPC: /openapi.json is valid JSON with an
// operation for every RPC of SandboxService (read from its descriptor, so
// an RPC added to the proto without HTTP exposure fails here), and every
// route the document lists is served (none answers "no route").
func TestHTTPOpenAPIListsEveryRPC(t *testing.T) {
	base := httpServer(t, "")
	var doc struct {
		Swagger string
		Paths   map[string]map[string]struct{ OperationID string }
	}
	call(t, "GET", base+"/openapi.json", nil).ok(t, &doc)
	if doc.Swagger != "2.0" || len(doc.Paths) == 0 {
		t.Fatalf("not an OpenAPI v2 document: swagger %q, %d paths", doc.Swagger, len(doc.Paths))
	}
	ops := map[string]bool{}
	placeholder := regexp.MustCompile(`\{[^}]+\}`)
	for path, methods := range doc.Paths {
		for method, op := range methods {
			ops[regexp.MustCompile(`\d+$`).ReplaceAllString(op.OperationID, "")] = true
			// Served: a request to the route reaches the API (its answer
			// may be an error about the request, never a routing one).
			url := base + placeholder.ReplaceAllString(path, "x-test")
			if strings.Contains(path, "files") {
				url += "?path=x"
			}
			rctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
			req, _ := http.NewRequestWithContext(rctx, strings.ToUpper(method), url, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatalf("%s %s: %v", method, path, err)
			}
			head, n := make([]byte, 512), 0
			if resp.StatusCode != http.StatusOK { // a watch streams on: no body to wait for
				n, _ = io.ReadFull(resp.Body, head)
			}
			resp.Body.Close()
			cancel()
			if strings.Contains(string(head[:n]), "no route") || resp.StatusCode == 405 {
				t.Errorf("%s %s is in the document but not served: HTTP %d %s", method, path, resp.StatusCode, head[:n])
			}
		}
	}
	methods := sandpodv1.File_sandpod_v1_sandbox_service_proto.Services().ByName("SandboxService").Methods()
	for i := 0; i < methods.Len(); i++ {
		if name := string(methods.Get(i).Name()); !ops["SandboxService_"+name] {
			t.Errorf("RPC %s has no operation in /openapi.json: give it a google.api.http option (or keep generate_unbound_methods)", name)
		}
	}
	for _, hand := range []string{"HTTP_Exec", "HTTP_DownloadFile", "HTTP_UploadFile"} {
		if !ops[hand] {
			t.Errorf("no %s in /openapi.json", hand)
		}
	}
}

func TestHTTPAuth(t *testing.T) {
	const token = "s3cret-http-token"
	base := httpServer(t, token)
	call(t, "GET", base+"/v1/templates", nil).wantError(t, 401, "UNAUTHENTICATED", "INVALID_TOKEN")
	a := call(t, "GET", base+"/v1/templates", nil, "Authorization", "Bearer wrong")
	a.wantError(t, 401, "UNAUTHENTICATED", "INVALID_TOKEN")
	if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("WWW-Authenticate %q", a.header.Get("WWW-Authenticate"))
	}
	call(t, "POST", base+"/v1/sandboxes/x:exec", map[string]any{"shell": "true"}).wantError(t, 401, "UNAUTHENTICATED", "INVALID_TOKEN")
	call(t, "PUT", base+"/v1/sandboxes/x/files/content?path=a", "data").wantError(t, 401, "UNAUTHENTICATED", "INVALID_TOKEN")
	var templates struct{ Templates []struct{ Name string } }
	call(t, "GET", base+"/v1/templates", nil, "Authorization", "Bearer "+token).ok(t, &templates)
	if len(templates.Templates) == 0 {
		t.Fatal("no templates with the right token")
	}
	// The document describes the API, not its data: served to anyone.
	call(t, "GET", base+"/openapi.json", nil).ok(t, nil)
}

// TestHTTPStopEndsStreams: a watch open over HTTP does not keep serve from
// stopping (testserver fails a stop that takes 30 s), and its caller sees
// the stream end.
func TestHTTPStopEndsStreams(t *testing.T) {
	base, srv := startHTTPServer(t, "")
	wctx := ctx(t)
	req, _ := http.NewRequestWithContext(wctx, "GET", base+"/v1/sandboxes:watch", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch: HTTP %d", resp.StatusCode)
	}
	srv.Stop(t)
	if _, err := io.ReadAll(resp.Body); wctx.Err() != nil {
		t.Fatalf("the watch did not end with serve: %v", err)
	}
	if !strings.Contains(srv.Log(), "sandpod serve stopped") {
		t.Errorf("serve did not stop cleanly:\n%s", srv.Log())
	}
}

// TestHTTPOverTLS: with --tls-cert the HTTP API serves HTTPS with the same
// certificate (HTTP/2 included, the exec stream over it), and no plaintext.
func TestHTTPOverTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir, "http")
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	testserver.Start(t, testserver.Options{
		ExtraArgs:   []string{"--tls-cert", certFile, "--tls-key", keyFile, "--http-listen", addr},
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots}))},
	})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	req, _ := http.NewRequestWithContext(ctx(t), "POST", "https://"+addr+"/v1/sandboxes:claim", strings.NewReader(`{"template": "python"}`))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var claimed httpSandbox
	err = json.NewDecoder(resp.Body).Decode(&claimed)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("claim over HTTPS: HTTP %d (%s), %v", resp.StatusCode, resp.Proto, err)
	}
	req, _ = http.NewRequestWithContext(ctx(t), "POST", "https://"+addr+"/v1/sandboxes/"+claimed.Sandbox.Name+":exec?argv=cat", strings.NewReader("over h2"))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := readExec(t, resp.Body)
	resp.Body.Close()
	if out.stdout != "over h2" || out.exitCode != 0 {
		t.Fatalf("exec over HTTP/2: %+v", out)
	}
	if plain, err := http.Get("http://" + addr + "/v1/templates"); err == nil {
		plain.Body.Close()
		if plain.StatusCode == 200 {
			t.Fatal("a plaintext request to the TLS HTTP API succeeded")
		}
	}
}
