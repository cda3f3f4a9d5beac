package integration

import (
	"context"
	"net"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandpod/sandpod/bridge/e2b"
	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem"
	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem/filesystemconnect"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process/processconnect"
	"github.com/sandpod/sandpod/tests/testserver"
)

// A caller without the API key, or with a wrong one, must not attach to a
// command started through the E2B front door (its output is the
// sandbox's) nor read a watcher's events: E2B's sandbox ids and pids are
// no secrets (a pid is a small number, the id is in URLs and logs).
func TestE2BFollowersNeedTheKey(t *testing.T) {
	const key = "e2b-owner-key-0123456789"
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
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
