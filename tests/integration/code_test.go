package integration

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// codeRun is everything one RunCode sent.
type codeRun struct {
	stdout, stderr string
	results        []*sandpodv1.CodeResult
	err            *sandpodv1.CodeError
	done           *sandpodv1.CodeDone
}

// text is the text/plain of the cell's value ("" if none).
func (r codeRun) text() string {
	for _, res := range r.results {
		if res.GetIsMainResult() {
			return string(res.GetData()["text/plain"])
		}
	}
	return ""
}

func runCode(t *testing.T, c sandpodv1.SandboxServiceClient, req *sandpodv1.RunCodeRequest) (codeRun, error) {
	t.Helper()
	stream, err := c.RunCode(ctx(t), req)
	if err != nil {
		return codeRun{}, err
	}
	var r codeRun
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return r, errors.New("RunCode ended without done")
		}
		if err != nil {
			return r, err
		}
		switch m := msg.Msg.(type) {
		case *sandpodv1.RunCodeResponse_Stdout:
			r.stdout += string(m.Stdout)
		case *sandpodv1.RunCodeResponse_Stderr:
			r.stderr += string(m.Stderr)
		case *sandpodv1.RunCodeResponse_Result:
			r.results = append(r.results, m.Result)
		case *sandpodv1.RunCodeResponse_Error:
			r.err = m.Error
		case *sandpodv1.RunCodeResponse_Done:
			r.done = m.Done
			return r, nil
		}
	}
}

func mustRun(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, ctxID, code string) codeRun {
	t.Helper()
	r, err := runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: sandbox, ContextId: ctxID, Code: code})
	if err != nil {
		t.Fatalf("RunCode %q: %v", code, err)
	}
	return r
}

// TestRunCodeKeepsStateAndStreams: the default context keeps variables
// between calls, returns the last expression's value, streams output, and
// turns an exception into name, value and traceback.
func TestRunCodeKeepsStateAndStreams(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	name := sb.GetName()

	if r := mustRun(t, c, name, "", "x = 40\nprint('hello'); import sys; print('oops', file=sys.stderr)"); r.stdout != "hello\n" || r.stderr != "oops\n" || r.err != nil || r.done.GetContextId() != "default" {
		t.Fatalf("first cell: %+v", r)
	}
	if r := mustRun(t, c, name, "", "x + 2"); r.text() != "42" || r.done.GetExecutionCount() != 2 {
		t.Fatalf("x + 2 in the same context: %q (count %d); want 42, 2", r.text(), r.done.GetExecutionCount())
	}
	r := mustRun(t, c, name, "", "def f():\n    return 1/0\nf()")
	if r.err.GetName() != "ZeroDivisionError" || !strings.Contains(r.err.GetTraceback(), "return 1/0") || r.done.GetContextLost() {
		t.Fatalf("error: %+v", r.err)
	}
	// Who runs it: the sandbox's run-as user, in its workspace.
	if r := mustRun(t, c, name, "", "import os; (os.getuid(), os.getcwd())"); r.text() != "(1000, '/workspace')" {
		t.Errorf("uid and cwd of the context: %s", r.text())
	}
}

// TestRunCodeBadInput: the edge refuses what it can name, the agent what
// only it knows (an unknown context).
func TestRunCodeBadInput(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	name := sb.GetName()

	_, err := runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "1", ContextId: "nope"})
	wantCode(t, err, codes.NotFound, `code context "nope" not found`)
	if got := errinfo.Reason(err); got != "CODE_CONTEXT_NOT_FOUND" {
		t.Errorf("reason of an unknown context: %q", got)
	}
	_, err = runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: strings.Repeat("#", 1<<20+1)})
	wantCode(t, err, codes.InvalidArgument, "code: is 1048577 bytes, the limit is 1048576")
	wantWhy(t, err, errinfo.ReasonInvalidCode)
	_, err = runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "1", Language: "r"})
	wantCode(t, err, codes.InvalidArgument, `language: "r" is not supported`)
	wantWhy(t, err, errinfo.ReasonInvalidCode)
	_, err = runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "1", ContextId: "Bad_ID"})
	wantCode(t, err, codes.InvalidArgument, "context_id")
	wantWhy(t, err, errinfo.ReasonInvalidContextID)
	_, err = runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "1", Timeout: dur(-time.Second)})
	wantCode(t, err, codes.InvalidArgument, "timeout")
	_, err = c.DeleteCodeContext(ctx(t), &sandpodv1.DeleteCodeContextRequest{Sandbox: name, ContextId: "nope"})
	wantCode(t, err, codes.NotFound, "not found")
	wantWhy(t, err, errinfo.ReasonCodeContextNotFound)
}

// TestCodeContextsAreIsolatedAndLimited: contexts do not share state, are
// listed and deleted, and a sandbox holds at most 8.
func TestCodeContextsAreIsolatedAndLimited(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	name := sb.GetName()

	a, err := c.CreateCodeContext(ctx(t), &sandpodv1.CreateCodeContextRequest{Sandbox: name, ContextId: "a"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateCodeContext(ctx(t), &sandpodv1.CreateCodeContextRequest{Sandbox: name, ContextId: "a"})
	wantCode(t, err, codes.AlreadyExists, "")
	wantWhy(t, err, errinfo.ReasonCodeContextExists)
	mustRun(t, c, name, a.GetContext().GetId(), "v = 'a'")
	if r := mustRun(t, c, name, "", "v"); r.err.GetName() != "NameError" {
		t.Fatalf("the default context sees a's variable: %+v", r)
	}
	for i := 0; i < 7; i++ { // a and default are two of the eight
		if _, err := c.CreateCodeContext(ctx(t), &sandpodv1.CreateCodeContextRequest{Sandbox: name}); err != nil && i < 6 {
			t.Fatalf("context %d: %v", i+3, err)
		} else if i == 6 {
			wantCode(t, err, codes.ResourceExhausted, "the limit")
			wantWhy(t, err, errinfo.ReasonCodeContextLimit)
		}
	}
	list, err := c.ListCodeContexts(ctx(t), &sandpodv1.ListCodeContextsRequest{Sandbox: name})
	if err != nil || len(list.GetContexts()) != 8 {
		t.Fatalf("list: %v, %v", list, err)
	}
	if _, err := c.DeleteCodeContext(ctx(t), &sandpodv1.DeleteCodeContextRequest{Sandbox: name, ContextId: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err = runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "v", ContextId: "a"})
	wantCode(t, err, codes.NotFound, "not found")
	wantWhy(t, err, errinfo.ReasonCodeContextNotFound)
}

// TestRunCodeTimeoutAndDeath: a timeout interrupts the cell and keeps the
// state; a context whose code exits is reported lost and replaced.
func TestRunCodeTimeoutAndDeath(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	name := sb.GetName()

	mustRun(t, c, name, "", "x = 7")
	r, err := runCode(t, c, &sandpodv1.RunCodeRequest{Sandbox: name, Code: "import time\nprint('start', flush=True)\ntime.sleep(600)", Timeout: dur(time.Second)})
	if err != nil || !r.done.GetTimedOut() || r.err.GetName() != "KeyboardInterrupt" || r.done.GetContextLost() || r.stdout != "start\n" {
		t.Fatalf("timed out cell: %+v, %v", r, err)
	}
	if r := mustRun(t, c, name, "", "x"); r.text() != "7" {
		t.Fatalf("x after the interrupt: %+v", r)
	}
	r = mustRun(t, c, name, "", "import os\nprint('bye', flush=True)\ndisplay('last words')\nos._exit(3)")
	if !r.done.GetContextLost() || r.err.GetName() != "ContextDied" || !strings.Contains(r.err.GetValue(), "exited with code 3") || r.stdout != "bye\n" ||
		len(r.results) != 1 || string(r.results[0].GetData()["text/plain"]) != "'last words'" {
		t.Fatalf("os._exit: %+v", r)
	}
	if r := mustRun(t, c, name, "", "'x' in globals()"); r.text() != "False" || r.done.GetContextLost() {
		t.Fatalf("the default context after its death: %+v", r)
	}
}
