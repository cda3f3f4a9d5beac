package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// startAgent serves an agent over an in-memory connection; the context
// carries its secret and a generous deadline.
func startAgent(t *testing.T) (sandpodv1.AgentServiceClient, context.Context, *Server) {
	t.Helper()
	srv, err := New(Config{Sandbox: "sb", Root: t.TempDir(), Secret: "s3cret", Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	conn := serveInMemory(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return sandpodv1.NewAgentServiceClient(conn), metadata.AppendToOutgoingContext(ctx, agentconn.SecretMetadataKey, "s3cret"), srv
}

// A command that never reads its stdin is sent a full window of it, then
// SIGKILL: the signal is read at once, behind the stdin, and the exec
// ends with the signal's status. Without the feed the agent would sit in
// a pipe write and never read the signal.
func TestSignalBehindUnreadStdin(t *testing.T) {
	client, ctx, srv := startAgent(t)
	stream, err := client.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Argv: []string{"sleep", "1000"}}}}); err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	window := first.GetStarted().GetStdinWindow()
	if window != StdinWindow {
		t.Fatalf("started = %v, want stdin_window %d", first, StdinWindow)
	}
	chunk := make([]byte, 256<<10)
	for sent := int64(0); sent+int64(len(chunk)) <= window; sent += int64(len(chunk)) {
		if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: chunk}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Signal{Signal: int32(syscall.SIGKILL)}}); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("exec ended with %v, want an exit status", err)
		}
		if msg.GetStdinAcked() > window {
			t.Fatalf("acknowledged %d bytes, more than were sent", msg.GetStdinAcked())
		}
		if exit := msg.GetExit(); exit != nil {
			if exit.GetSignal() != int32(syscall.SIGKILL) || exit.GetExitCode() != -1 {
				t.Fatalf("exit = %v, want killed by signal 9", exit)
			}
			break
		}
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the exit status: %v, want EOF", err)
	}
	waitFor(t, "no exec running", func() bool { return srv.running.Load() == 0 })
}

// Stdin reaches a command that reads it, in order, with acknowledgements
// up to the last byte, and close_stdin follows the data.
func TestStdinIsWrittenInOrderAndAcknowledged(t *testing.T) {
	client, ctx, srv := startAgent(t)
	stream, err := client.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Shell: "cat > out.bin"}}}); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 40 {
		b := make([]byte, 100<<10)
		for j := range b {
			b[j] = byte(i + j)
		}
		want = append(want, b...)
		if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: b}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_CloseStdin{CloseStdin: true}}); err != nil {
		t.Fatal(err)
	}
	var acked int64
	for {
		msg, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if n := msg.GetStdinAcked(); n != 0 {
			if n < acked {
				t.Fatalf("acknowledgement went back from %d to %d", acked, n)
			}
			acked = n
		}
		if exit := msg.GetExit(); exit != nil {
			if exit.GetExitCode() != 0 {
				t.Fatalf("cat exited with %v", exit)
			}
			break
		}
	}
	if acked != int64(len(want)) {
		t.Errorf("acknowledged %d bytes, want %d", acked, len(want))
	}
	got, err := os.ReadFile(filepath.Join(srv.cfg.Root, "out.bin"))
	if err != nil || string(got) != string(want) {
		t.Fatalf("cat wrote %d bytes (%v), want the %d sent, in order", len(got), err, len(want))
	}
}
