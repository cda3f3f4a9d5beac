package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBridgeHTTPClaimExecFiles: the in-cluster bridge's HTTP/JSON port
// (Service port "http", --http-listen=:50052 in the manifests), spoken as
// curl speaks it: a warm claim of a real pod, Python run in it with the
// output streamed as NDJSON, a file up and down as plain bytes, errors as
// JSON, and the bridge's token required.
func TestBridgeHTTPClaimExecFiles(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 1))
	env.WaitPoolReady(t, ns, "python", 1)
	base := "http://" + env.ServiceAddr(t, bridgeNamespace, bridgeService, "http") + "/v1/namespaces/" + ns
	token := env.BridgeToken(t)
	ctx := Context(t)

	do := func(method, path, tok string, body io.Reader) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}

	if code, out := do("GET", "/templates", "", nil); code != 401 || !strings.Contains(string(out), `"UNAUTHENTICATED"`) {
		t.Fatalf("no token: HTTP %d %s, want 401 UNAUTHENTICATED", code, out)
	}
	code, out := do("POST", "/sandboxes:claim", token, strings.NewReader(`{"template": "python"}`))
	var claimed struct {
		Sandbox struct{ Name string }
		Warm    bool
	}
	if code != 200 || json.Unmarshal(out, &claimed) != nil || !claimed.Warm {
		t.Fatalf("claim: HTTP %d %s", code, out)
	}
	name := claimed.Sandbox.Name

	code, out = do("POST", "/sandboxes/"+name+":exec", token, strings.NewReader(`{"shell": "python3 -c 'print(6 * 7)'; exit 3"}`))
	if code != 200 {
		t.Fatalf("exec: HTTP %d %s", code, out)
	}
	var stdout []byte
	exit := -100
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l struct {
			Result struct {
				Stdout []byte
				Exit   *struct{ ExitCode int }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("exec line %q: %v", sc.Bytes(), err)
		}
		stdout = append(stdout, l.Result.Stdout...)
		if l.Result.Exit != nil {
			exit = l.Result.Exit.ExitCode
		}
	}
	if string(stdout) != "42\n" || exit != 3 {
		t.Fatalf("exec: stdout %q exit %d, want \"42\\n\" and 3", stdout, exit)
	}

	data := bytes.Repeat([]byte("sandpod over http\n"), 50_000) // ~900 KB
	if code, out := do("PUT", "/sandboxes/"+name+"/files/content?path=data/in.txt&makeParents=true", token, bytes.NewReader(data)); code != 200 {
		t.Fatalf("upload: HTTP %d %s", code, out)
	}
	if code, out := do("GET", "/sandboxes/"+name+"/files/content?path=data/in.txt", token, nil); code != 200 || !bytes.Equal(out, data) {
		t.Fatalf("download: HTTP %d, %d bytes, want the %d uploaded", code, len(out), len(data))
	}
	if code, out := do("GET", "/sandboxes/"+name+"/files/content?path=nope", token, nil); code != 404 || !strings.Contains(string(out), `"FILE_NOT_FOUND"`) {
		t.Fatalf("missing file: HTTP %d %s", code, out)
	}
	if code, out := do("DELETE", "/sandboxes/"+name, token, nil); code != 200 {
		t.Fatalf("delete: HTTP %d %s", code, out)
	}
	if code, out := do("GET", "/sandboxes/"+name, token, nil); code != 404 || !strings.Contains(string(out), `"SANDBOX_NOT_FOUND"`) {
		t.Fatalf("after delete: HTTP %d %s", code, out)
	}
}
