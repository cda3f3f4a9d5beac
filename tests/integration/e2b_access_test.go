package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandpod/sandpod/bridge/e2b"
	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem"
	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem/filesystemconnect"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process/processconnect"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// do sends req and returns the answer's status and body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A server without tokens: a web page the user opens must not use its E2B
// API, neither by a cross-origin "simple" request (a text/plain POST needs
// no preflight) nor by DNS rebinding (a name of the page's re-pointed at
// 127.0.0.1: same-origin, it could read the answers and run commands). The
// E2B SDK's own calls (no Origin, Host an address) still work.
func TestE2BWithoutTokensRefusesWebPages(t *testing.T) {
	addr := testserver.FreeAddr(t)
	srv := testserver.Start(t, testserver.Options{ExtraArgs: []string{"--e2b-listen", addr}})
	post := func(host, origin string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, "http://"+addr+"/sandboxes", strings.NewReader(`{"templateID": "python", "timeout": 300}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "text/plain")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return do(t, req)
	}
	for name, tc := range map[string]struct{ host, origin, want string }{
		"a rebound name":            {host: "rebind.attacker.example:80", origin: "http://rebind.attacker.example", want: "DNS rebinding"},
		"a rebound name, no Origin": {host: "rebind.attacker.example", want: "DNS rebinding"},
		"a cross-origin page":       {origin: "https://attacker.example", want: "web page"},
	} {
		if code, body := post(tc.host, tc.origin); code != http.StatusForbidden || !strings.Contains(body, tc.want) {
			t.Errorf("create from %s: %d %s, want 403 naming %q", name, code, body, tc.want)
		}
	}
	list, err := srv.Client().ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetSandboxes()); n != 0 {
		t.Fatalf("%d sandboxes made by refused requests: %v", n, list.GetSandboxes())
	}
	if code, body := post("", ""); code != http.StatusCreated {
		t.Fatalf("create by the SDK's way: %d %s, want 201", code, body)
	}
}

// A caller without the API key, or with a wrong one, must not attach to a
// command started through the E2B front door (its output is the
// sandbox's) nor read a watcher's events: E2B's sandbox ids and pids are
// no secrets (a pid is a small number, the id is in URLs and logs).
func TestE2BFollowersNeedTheKey(t *testing.T) {
	const key = "e2b-owner-key-0123456789"
	addr := testserver.FreeAddr(t)
	srv := testserver.Start(t, testserver.Options{Token: key, ExtraArgs: []string{"--e2b-listen", addr}})
	sb, _ := claim(t, srv.Client(), "python")

	base := "http://" + addr
	proc := processconnect.NewProcessClient(http.DefaultClient, base)
	fs := filesystemconnect.NewFilesystemClient(http.DefaultClient, base)
	headers := func(h http.Header, token string) {
		h.Set("E2b-Sandbox-Id", sb.GetName())
		h.Set("E2b-Sandbox-Port", e2b.EnvdPort)
		if token != "" {
			h.Set("X-Access-Token", token)
		}
	}

	// The owner's command, running until the test ends.
	cctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	start := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "sleep", Args: []string{"600"}}})
	headers(start.Header(), key)
	owner, err := proc.Start(cctx, start)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if !owner.Receive() {
		t.Fatalf("start: no start event: %v\n%s", owner.Err(), srv.Log())
	}
	pid := owner.Msg().GetEvent().GetStart().GetPid()
	if pid == 0 {
		t.Fatalf("start: first event %v, want the start event with a pid", owner.Msg())
	}
	defer func() {
		kill := connect.NewRequest(&process.SendSignalRequest{
			Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}},
			Signal:  process.Signal_SIGNAL_SIGKILL,
		})
		headers(kill.Header(), key)
		_, _ = proc.SendSignal(ctx(t), kill)
	}()

	create := connect.NewRequest(&filesystem.CreateWatcherRequest{Path: "/home/user"})
	headers(create.Header(), key)
	wres, err := fs.CreateWatcher(ctx(t), create)
	if err != nil {
		t.Fatalf("create watcher: %v", err)
	}
	watcherID := wres.Msg.GetWatcherId()

	for name, token := range map[string]string{"no key": "", "a wrong key": "not-the-key"} {
		t.Run(name, func(t *testing.T) {
			req := connect.NewRequest(&process.ConnectRequest{Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}})
			headers(req.Header(), token)
			st, err := proc.Connect(ctx(t), req)
			if err == nil {
				if st.Receive() {
					t.Fatalf("connect with %s to pid %d: got event %v, want it refused", name, pid, st.Msg())
				}
				err = st.Err()
				st.Close()
			}
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Fatalf("connect with %s: %v, want Unauthenticated", name, err)
			}

			get := connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: watcherID})
			headers(get.Header(), token)
			if _, err := fs.GetWatcherEvents(ctx(t), get); connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Fatalf("watcher events with %s: %v, want Unauthenticated", name, err)
			}
			rm := connect.NewRequest(&filesystem.RemoveWatcherRequest{WatcherId: watcherID})
			headers(rm.Header(), token)
			if _, err := fs.RemoveWatcher(ctx(t), rm); connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Fatalf("remove watcher with %s: %v, want Unauthenticated", name, err)
			}
		})
	}
}

// A polled watcher (CreateWatcher) keeps the events nobody has taken yet
// in serve's memory: code in the sandbox makes them (long names, many
// files), so what one watcher keeps is bounded in bytes, not only in
// count, else a few watchers of one sandbox pin gigabytes of serve.
func TestE2BWatcherEventsAreBounded(t *testing.T) {
	const key = "e2b-owner-key-0123456789"
	const most = 1 << 20 // maxWatcherBytes
	addr := testserver.FreeAddr(t)
	srv := testserver.Start(t, testserver.Options{Token: key, ExtraArgs: []string{"--e2b-listen", addr}})
	sb, _ := claim(t, srv.Client(), "python")
	fs := filesystemconnect.NewFilesystemClient(http.DefaultClient, "http://"+addr)
	headers := func(h http.Header) {
		h.Set("E2b-Sandbox-Id", sb.GetName())
		h.Set("E2b-Sandbox-Port", e2b.EnvdPort)
		h.Set("X-Access-Token", key)
	}
	create := connect.NewRequest(&filesystem.CreateWatcherRequest{Path: "/home/user", Recursive: true})
	headers(create.Header())
	wres, err := fs.CreateWatcher(ctx(t), create)
	if err != nil {
		t.Fatalf("create watcher: %v", err)
	}
	// A streamed watch of the same tree tells when the last file is made.
	sctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	wd := connect.NewRequest(&filesystem.WatchDirRequest{Path: "/home/user", Recursive: true})
	headers(wd.Header())
	stream, err := fs.WatchDir(sctx, wd)
	if err != nil || !stream.Receive() {
		t.Fatalf("watch dir: %v %v", err, stream.Err())
	}

	// 3000 files whose names (relative to the watch) are ~1000 bytes: 3 MB
	// of events.
	r := sh(t, srv.Client(), sb.Name, `cd /workspace && python3 -c '
import os
d = "/".join(["d" * 200] * 4)
os.makedirs(d)
for i in range(3000):
    open(os.path.join(d, "f%05d" % i + "x" * 150), "w").close()
open("done", "w").close()
print("ok")'`)
	if !strings.Contains(r.stdout, "ok") {
		t.Fatalf("making the files: %+v", r)
	}
	for stream.Receive() {
		if ev := stream.Msg().GetFilesystem(); ev != nil && ev.GetName() == "done" {
			break
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("watch dir: %v", err)
	}
	cancel()

	get := connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: wres.Msg.GetWatcherId()})
	headers(get.Header())
	res, err := fs.GetWatcherEvents(ctx(t), get)
	if err != nil {
		t.Fatalf("watcher events: %v", err)
	}
	var size int
	for _, ev := range res.Msg.GetEvents() {
		size += len(ev.GetName())
	}
	if size > most || len(res.Msg.GetEvents()) == 0 {
		t.Fatalf("one poll got %d events, %d bytes of names: want some, at most %d bytes kept", len(res.Msg.GetEvents()), size, most)
	}
	if last := res.Msg.GetEvents()[len(res.Msg.GetEvents())-1]; last.GetName() != "done" {
		t.Errorf("last event %v, want the newest (done) kept", last)
	}
}

// The upload limit holds for what an upload writes, not only for what it
// sends: a gzip-encoded body of a few KiB inflates to gigabytes.
func TestE2BGzipUploadIsBounded(t *testing.T) {
	const key = "e2b-owner-key-0123456789"
	const limit = 1 << 20
	addr := testserver.FreeAddr(t)
	srv := testserver.Start(t, testserver.Options{Token: key, ExtraArgs: []string{"--e2b-listen", addr, "--http-max-upload", "1048576"}})
	sb, _ := claim(t, srv.Client(), "python")
	upload := func(size int) (int, string) {
		t.Helper()
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		if _, err := zw.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, "http://"+addr+"/files?path=/home/user/bomb", &gz)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("E2b-Sandbox-Id", sb.GetName())
		req.Header.Set("X-Access-Token", key)
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set("Content-Encoding", "gzip")
		return do(t, req)
	}
	if code, body := upload(limit); code != http.StatusOK {
		t.Fatalf("a gzip upload of exactly the limit: %d %s, want 200", code, body)
	}
	if code, body := upload(8 * limit); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a gzip upload inflating to 8 times the limit: %d %s, want 413", code, body)
	}
	r := sh(t, srv.Client(), sb.Name, "stat -c %s /workspace/bomb")
	if n := strings.TrimSpace(r.stdout); n == "8388608" {
		t.Fatalf("the refused upload wrote all %s bytes", n)
	}
}
