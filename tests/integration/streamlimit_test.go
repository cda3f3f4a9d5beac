package integration

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/bridge/e2b"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process/processconnect"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// streamCap is the --max-streams-per-caller of TestStreamsPerCallerAreLimited.
const streamCap = 4

// openWatch opens a WatchSandboxes stream as token and waits until the
// server has admitted it (its headers come once the watch is live) or
// refused it (the refusal is returned). close ends the stream.
func openWatch(t *testing.T, c sandpodv1.SandboxServiceClient, token string) (close func(), err error) {
	t.Helper()
	wctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx(t), "authorization", "Bearer "+token))
	st, err := c.WatchSandboxes(wctx, &sandpodv1.WatchSandboxesRequest{})
	if err != nil {
		cancel()
		return nil, err
	}
	if md, _ := st.Header(); md == nil { // no headers: the stream ended
		_, err := st.Recv()
		cancel()
		return nil, err
	}
	return cancel, nil
}

// openHTTPWatch opens GET /v1/sandboxes:watch as token; it answers 200 once
// the watch is live. close ends it.
func openHTTPWatch(t *testing.T, base, token string) (code int, body string, close func()) {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx(t))
	req, _ := http.NewRequestWithContext(wctx, "GET", base+"/v1/sandboxes:watch", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("HTTP watch: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		return res.StatusCode, string(b), func() {}
	}
	return res.StatusCode, "", func() { cancel(); res.Body.Close() }
}

// A holder of one token can hold open at most --max-streams-per-caller
// streams, counted across the gRPC API and the HTTP and E2B front doors;
// the next is refused with RESOURCE_EXHAUSTED (429 over HTTP) naming the
// limit and its flag, while another token, and unary calls, are still
// served; streams that end are given back (no leak over many rounds).
func TestStreamsPerCallerAreLimited(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("alice-token\nbob-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr, e2bAddr := testserver.FreeAddr(t), testserver.FreeAddr(t)
	srv := testserver.Start(t, testserver.Options{Token: "alice-token", ExtraArgs: []string{
		"--token-file", tokenFile, "--max-streams-per-caller", "4",
		"--http-listen", httpAddr, "--e2b-listen", e2bAddr}})
	// A connection without a token of its own: each call names its token.
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := sandpodv1.NewSandboxServiceClient(conn)
	httpBase := "http://" + httpAddr

	// Up to the cap: three gRPC streams and one over HTTP, one token.
	var closers []func()
	closeAll := func() {
		for _, f := range closers {
			f()
		}
		closers = nil
	}
	defer closeAll()
	for i := range streamCap - 1 {
		cl, err := openWatch(t, c, "alice-token")
		if err != nil {
			t.Fatalf("stream %d of %d: %v", i+1, streamCap, err)
		}
		closers = append(closers, cl)
	}
	code, body, cl := openHTTPWatch(t, httpBase, "alice-token")
	if code != http.StatusOK {
		t.Fatalf("HTTP watch within the cap: %d %s", code, body)
	}
	closers = append(closers, cl)

	// One more, over gRPC and over HTTP: refused, saying what to do.
	_, err = openWatch(t, c, "alice-token")
	wantCode(t, err, codes.ResourceExhausted, "--max-streams-per-caller")
	wantWhy(t, err, errinfo.ReasonStreamLimit)
	if !strings.Contains(err.Error(), "4") {
		t.Errorf("the refusal does not name the limit: %v", err)
	}
	code, body, _ = openHTTPWatch(t, httpBase, "alice-token")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-streams-per-caller") {
		t.Errorf("HTTP watch over the cap: %d %s, want 429 naming the flag", code, body)
	}

	// Another token is served, and so are alice's unary calls.
	cl, err = openWatch(t, c, "bob-token")
	if err != nil {
		t.Fatalf("another token's stream: %v", err)
	}
	cl()
	sb, _ := claim(t, srv.Client(), "python")
	if _, err := srv.Client().ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{}); err != nil {
		t.Fatalf("a unary call at the stream cap: %v", err)
	}

	// The E2B front door: a running command holds one stream (its exec),
	// each client following it another.
	closeAll()
	eventually(t, "the streams given back", func() bool {
		cl, err := openWatch(t, c, "alice-token")
		if err == nil {
			cl()
		}
		return err == nil
	})
	proc := processconnect.NewProcessClient(http.DefaultClient, "http://"+e2bAddr)
	headers := func(h http.Header) {
		h.Set("E2b-Sandbox-Id", sb.GetName())
		h.Set("E2b-Sandbox-Port", e2b.EnvdPort)
		h.Set("X-Access-Token", "alice-token")
	}
	cctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	start := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "sleep", Args: []string{"600"}}})
	headers(start.Header())
	owner, err := proc.Start(cctx, start)
	if err != nil || !owner.Receive() {
		t.Fatalf("start: %v %v\n%s", err, owner.Err(), srv.Log())
	}
	pid := owner.Msg().GetEvent().GetStart().GetPid()
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	follow := func() error {
		req := connect.NewRequest(&process.ConnectRequest{Process: sel})
		headers(req.Header())
		st, err := proc.Connect(cctx, req)
		if err != nil {
			return err
		}
		if !st.Receive() { // the start event, once following
			return st.Err()
		}
		return nil
	}
	for i := range streamCap - 1 {
		if err := follow(); err != nil {
			t.Fatalf("follower %d: %v", i+1, err)
		}
	}
	if err := follow(); connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "--max-streams-per-caller") {
		t.Fatalf("a follower over the cap: %v, want resource_exhausted naming the flag", err)
	}
	if _, err := openWatch(t, c, "alice-token"); errinfo.Reason(err) != errinfo.ReasonStreamLimit {
		t.Fatalf("a gRPC stream while E2B streams hold the cap: %v", err)
	}
	kill := connect.NewRequest(&process.SendSignalRequest{Process: sel, Signal: process.Signal_SIGNAL_SIGKILL})
	headers(kill.Header())
	if _, err := proc.SendSignal(ctx(t), kill); err != nil {
		t.Fatalf("kill: %v", err)
	}
	cancel()

	// Open and close many times: every stream is given back, and only
	// once (the cap holds exactly as before).
	for round := range 25 {
		var got int
		eventually(t, "a round of streams", func() bool {
			for got < streamCap-1 {
				cl, err := openWatch(t, c, "alice-token")
				if err != nil {
					return false
				}
				closers = append(closers, cl)
				got++
			}
			code, _, cl := openHTTPWatch(t, httpBase, "alice-token")
			if code != http.StatusOK {
				return false
			}
			closers = append(closers, cl)
			return true
		})
		if round == 24 {
			_, err := openWatch(t, c, "alice-token")
			wantWhy(t, err, errinfo.ReasonStreamLimit)
		}
		closeAll()
	}
}
