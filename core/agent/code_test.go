package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The agent's code contexts with the host's python3, in process (so the
// race detector sees the agent's side). The real binary and sandbox are
// covered by tests/integration.
func agentClient(t *testing.T) (sandpodv1.AgentServiceClient, context.Context, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("no python3 (sandpod runs sandboxes' code with the host's): %v", err)
	}
	root := t.TempDir()
	srv, err := New(Config{Sandbox: "sb", Root: root, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	conn := serveInMemory(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return sandpodv1.NewAgentServiceClient(conn), metadata.AppendToOutgoingContext(ctx, agentconn.SecretMetadataKey, "s"), root
}

type cell struct {
	out, errOut string
	results     []*sandpodv1.CodeResult
	err         *sandpodv1.CodeError
	done        *sandpodv1.CodeDone
}

func run(t *testing.T, c sandpodv1.AgentServiceClient, ctx context.Context, req *sandpodv1.RunCodeRequest) cell {
	t.Helper()
	st, err := c.RunCode(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var r cell
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("no done")
		}
		if err != nil {
			t.Fatal(err)
		}
		switch x := m.Msg.(type) {
		case *sandpodv1.RunCodeResponse_Stdout:
			r.out += string(x.Stdout)
		case *sandpodv1.RunCodeResponse_Stderr:
			r.errOut += string(x.Stderr)
		case *sandpodv1.RunCodeResponse_Result:
			r.results = append(r.results, x.Result)
		case *sandpodv1.RunCodeResponse_Error:
			r.err = x.Error
		case *sandpodv1.RunCodeResponse_Done:
			r.done = x.Done
			return r
		}
	}
}

func TestCodeContextInProcess(t *testing.T) {
	c, ctx, root := agentClient(t)
	// Output of every size keeps its order and is all there, up to the end
	// marker, however the reads split it.
	r := run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "import sys\nfor i in range(2000):\n    print(i)\n    sys.stderr.write('e')\nsys.stdout.write('no newline')"})
	var want strings.Builder
	for i := 0; i < 2000; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	want.WriteString("no newline")
	if r.out != want.String() || r.errOut != strings.Repeat("e", 2000) || r.err != nil {
		t.Fatalf("output: %d bytes out, %d err, %v", len(r.out), len(r.errOut), r.err)
	}
	// Concurrent cells in one context run one after another.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "n = globals().get('n', 0) + 1"})
		}()
	}
	wg.Wait()
	if r := run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "n"}); string(r.results[0].GetData()["text/plain"]) != "4" {
		t.Fatalf("n after 4 concurrent cells: %+v", r.results)
	}
	// A caller that goes away interrupts the cell; the context lives on.
	cctx, cancel := context.WithCancel(ctx)
	st, err := c.RunCode(cctx, &sandpodv1.RunCodeRequest{Code: "import time\nprint('in', flush=True)\ntime.sleep(600)"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if r := run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "n", Timeout: durationpb.New(time.Minute)}); r.done.GetContextLost() || string(r.results[0].GetData()["text/plain"]) != "4" {
		t.Fatalf("after a caller left: %+v", r)
	}
	// An interrupt that arrives between cells (here from a thread of the
	// cell, which does not block SIGINT) is ignored: the context lives on.
	run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "import os, signal, threading, time\n" +
		"def late():\n    time.sleep(0.2)\n    os.kill(os.getpid(), signal.SIGINT)\n    open('fired', 'w').close()\n" +
		"threading.Thread(target=late).start()"})
	deadline := time.Now().Add(time.Minute)
	for _, err := os.Stat(filepath.Join(root, "fired")); err != nil; _, err = os.Stat(filepath.Join(root, "fired")) {
		if time.Now().After(deadline) {
			t.Fatal("the thread never sent its interrupt")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "n"}); r.err != nil || string(r.results[0].GetData()["text/plain"]) != "4" {
		t.Fatalf("after an interrupt between cells: %+v %v", r.results, r.err)
	}
	// Frames the cell forges on fd 4 end the context, and say so.
	r = run(t, c, ctx, &sandpodv1.RunCodeRequest{Code: "import os; os.write(4, b'\\xff\\xff\\xff\\xff')\nimport time; time.sleep(30)"})
	if !r.done.GetContextLost() || !strings.Contains(r.err.GetValue(), "protocol") {
		t.Fatalf("forged frame: %+v", r.err)
	}
}
