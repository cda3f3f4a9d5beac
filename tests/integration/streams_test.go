package integration

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// windowedStdin sends stdin on an exec stream as a client must: never more
// than the server's stdin window unacknowledged. Sends are serialised, so
// a signal can be sent from another goroutine while stdin waits for room.
type windowedStdin struct {
	stream sandpodv1.SandboxService_ExecClient
	sendMu sync.Mutex

	mu     sync.Mutex
	room   sync.Cond
	window int64
	sent   int64
	acked  int64
	ended  bool
}

func newWindowedStdin(stream sandpodv1.SandboxService_ExecClient, window int64) *windowedStdin {
	w := &windowedStdin{stream: stream, window: window}
	w.room.L = &w.mu
	return w
}

func (w *windowedStdin) send(m *sandpodv1.ExecRequest) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	return w.stream.Send(m)
}

// write sends b in chunks, each once it fits in the window; it returns
// when all is sent or the exec ended.
func (w *windowedStdin) write(b []byte, chunk int) {
	for len(b) > 0 {
		n := int64(min(len(b), chunk))
		w.mu.Lock()
		for !w.ended && w.sent-w.acked+n > w.window {
			w.room.Wait()
		}
		if w.ended {
			w.mu.Unlock()
			return
		}
		w.sent += n
		w.room.Broadcast() // for waitFull
		w.mu.Unlock()
		if w.send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: b[:n]}}) != nil {
			return
		}
		b = b[n:]
	}
}

// waitFull waits until the window is full: the next write waits for room.
func (w *windowedStdin) waitFull(chunk int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.ended && w.sent-w.acked+int64(chunk) <= w.window {
		w.room.Wait()
	}
}

// take notes what a server message says about the window.
func (w *windowedStdin) take(m *sandpodv1.ExecResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := m.GetStdinAcked(); n > w.acked {
		w.acked = n
	}
	if m.GetExit() != nil {
		w.ended = true
	}
	w.room.Broadcast()
}

func (w *windowedStdin) end() {
	w.mu.Lock()
	w.ended = true
	w.room.Broadcast()
	w.mu.Unlock()
}

// A command that never reads its stdin is sent 64 MiB of it, through the
// bridge and the agent, then SIGKILL: the kill is acted on although the
// stdin is still unread, and the exec ends with the signal's status. The
// sandbox serves calls afterwards. Only the context's deadline bounds it.
func TestSignalReachesACommandThatReadsNoStdin(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			stream, err := c.Exec(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: []string{"sleep", "1000"}}}}); err != nil {
				t.Fatal(err)
			}
			first, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			window := first.GetStarted().GetStdinWindow()
			if window <= 0 {
				t.Fatalf("started = %v, want a stdin window", first)
			}
			in := newWindowedStdin(stream, window)
			defer in.end()
			const chunk = 256 << 10
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				in.write(make([]byte, 64<<20), chunk)
			}()
			var exit *sandpodv1.ExitStatus
			recvd := make(chan error, 1)
			go func() {
				for {
					msg, err := stream.Recv()
					if err != nil {
						in.end()
						recvd <- err
						return
					}
					in.take(msg)
					if exit = msg.GetExit(); exit != nil {
						recvd <- nil
						return
					}
				}
			}()
			in.waitFull(chunk) // the command has the window's worth unread
			if err := in.send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Signal{Signal: int32(sig)}}); err != nil {
				t.Fatalf("send signal: %v", err)
			}
			if err := <-recvd; err != nil {
				t.Fatalf("exec ended with %v, want an exit status", err)
			}
			<-wrote
			if exit.GetSignal() != int32(sig) || exit.GetExitCode() != -1 {
				t.Fatalf("exit = %v, want killed by %v", exit, sig)
			}
			in.mu.Lock()
			sent, acked := in.sent, in.acked
			in.mu.Unlock()
			t.Logf("%d bytes of stdin sent, %d acknowledged (taken by the pipe, or dropped once the command died) when %v ended it", sent, acked, sig)
			if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the exit status: %v, want the stream's end", err)
			}
		})
	}
	if r := sh(t, c, sb.Name, "echo still here"); r.stdout != "still here\n" {
		t.Fatalf("exec after the kills: %+v", r)
	}
}

// A directory of 40,000 entries lists completely, page by page, sorted,
// at the default page size and at the largest, without a message-size
// error; bad paging is refused.
func TestListFilesPagesFortyThousandEntries(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	const n = 40000
	if r := sh(t, c, sb.Name, fmt.Sprintf("mkdir big && cd big && seq -f 'entry-%%05g' 0 %d | xargs touch && ls | wc -l", n-1)); strings.TrimSpace(r.stdout) != fmt.Sprint(n) {
		t.Fatalf("making %d files: %+v", n, r)
	}
	for _, tc := range []struct {
		size  int32
		pages int
	}{{0, 40}, {10000, 4}, {3000, 14}} {
		t.Run(fmt.Sprintf("page size %d", tc.size), func(t *testing.T) {
			token, pages, seen := "", 0, 0
			for {
				resp, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: "big", PageSize: tc.size, PageToken: token})
				if err != nil {
					t.Fatalf("page %d: %v", pages+1, err)
				}
				pages++
				for _, f := range resp.GetFiles() {
					if want := fmt.Sprintf("entry-%05d", seen); f.GetName() != want || f.GetPath() != "big/"+want {
						t.Fatalf("entry %d is %q (%q), want %q: not in order, repeated or skipped", seen, f.GetName(), f.GetPath(), want)
					}
					seen++
				}
				if token = resp.GetNextPageToken(); token == "" {
					break
				}
			}
			if seen != n || pages != tc.pages {
				t.Fatalf("listed %d entries in %d pages, want %d in %d", seen, pages, n, tc.pages)
			}
		})
	}

	first, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: "big", PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*sandpodv1.ListFilesRequest{
		"negative page size":         {Sandbox: sb.Name, Path: "big", PageSize: -1},
		"page size over the maximum": {Sandbox: sb.Name, Path: "big", PageSize: 10001},
		"garbage page token":         {Sandbox: sb.Name, Path: "big", PageToken: "garbage"},
		"token of another directory": {Sandbox: sb.Name, Path: "/", PageToken: first.GetNextPageToken()},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.ListFiles(ctx(t), req)
			field := "page_token"
			if req.PageSize != 0 {
				field = "page_size"
			}
			wantCode(t, err, codes.InvalidArgument, field)
		})
	}
}

// An agent's RESOURCE_EXHAUSTED reaches the caller as such, with its
// message: here an exec start that the bridge accepts (under 8 MiB) but
// that, with the claim's environment the bridge adds, is over the agent's
// own 8 MiB message limit. The bridge must not report it as an agent that
// is unreachable or hung.
func TestAgentResourceExhaustedIsReportedAsSuch(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	env := map[string]string{}
	for i := range 8 {
		env[fmt.Sprintf("CLAIM_%d", i)] = strings.Repeat("e", 100<<10)
	}
	resp, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: "python", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	sb := resp.GetSandbox().GetName()
	argv := []string{"true"}
	for len(argv) < 63 {
		argv = append(argv, strings.Repeat("a", 128<<10-1)) // the most one argument may be
	}
	_, err = execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb, Argv: argv}, "")
	wantCode(t, err, codes.ResourceExhausted, "larger than max")
	if strings.Contains(status.Convert(err).Message(), "not answering") || strings.Contains(status.Convert(err).Message(), "unreachable") {
		t.Fatalf("the agent's limit was reported as an agent failure: %v", err)
	}
	if r := sh(t, c, sb, "echo still here"); r.stdout != "still here\n" {
		t.Fatalf("exec after the refused one: %+v", r)
	}
}
