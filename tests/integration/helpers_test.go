// Package integration tests the real `sandpod serve` binary over real gRPC:
// sandboxes as a user sees them through the API.
package integration

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// ctx gives each call a generous deadline: a loaded 2-core machine is slow.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return c
}

type execResult struct {
	stdout, stderr string
	exit           *sandpodv1.ExitStatus
}

func execIn(t *testing.T, c sandpodv1.SandboxServiceClient, start *sandpodv1.ExecStart, stdin string) (execResult, error) {
	t.Helper()
	stream, err := c.Exec(ctx(t))
	if err != nil {
		return execResult{}, err
	}
	if err := stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: start}}); err != nil {
		return execResult{}, err
	}
	if stdin != "" {
		_ = stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte(stdin)}})
	}
	_ = stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_CloseStdin{CloseStdin: true}})
	var out, errOut strings.Builder
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return execResult{out.String(), errOut.String(), nil}, errors.New("exec stream ended without an exit status")
		}
		if err != nil {
			return execResult{}, err
		}
		switch m := msg.Msg.(type) {
		case *sandpodv1.ExecResponse_Stdout:
			out.Write(m.Stdout)
		case *sandpodv1.ExecResponse_Stderr:
			errOut.Write(m.Stderr)
		case *sandpodv1.ExecResponse_Exit:
			return execResult{out.String(), errOut.String(), m.Exit}, nil
		}
	}
}

// sh runs a shell command and fails the test if the call itself fails.
func sh(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, cmd string) execResult {
	t.Helper()
	r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sandbox, Shell: cmd}, "")
	if err != nil {
		t.Fatalf("exec %q in %s: %v", cmd, sandbox, err)
	}
	return r
}

func claim(t *testing.T, c sandpodv1.SandboxServiceClient, template string) (*sandpodv1.Sandbox, bool) {
	t.Helper()
	resp, err := c.ClaimSandbox(ctx(t), &sandpodv1.ClaimSandboxRequest{Template: template})
	if err != nil {
		t.Fatalf("claim %s: %v", template, err)
	}
	if resp.GetSandbox().GetPhase() != sandpodv1.Phase_PHASE_RUNNING {
		t.Fatalf("claimed sandbox is %s, want RUNNING", resp.GetSandbox().GetPhase())
	}
	return resp.GetSandbox(), resp.GetWarm()
}

func writeFile(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, path string, data []byte) error {
	t.Helper()
	stream, err := c.WriteFile(ctx(t))
	if err != nil {
		return err
	}
	if err := stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Header{Header: &sandpodv1.WriteFileHeader{Sandbox: sandbox, Path: path, MakeParents: true}}}); err != nil {
		_, err = stream.CloseAndRecv()
		return err
	}
	for len(data) > 0 {
		n := min(len(data), 256<<10)
		if err := stream.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: data[:n]}}); err != nil {
			break
		}
		data = data[n:]
	}
	_, err = stream.CloseAndRecv()
	return err
}

func readFile(t *testing.T, c sandpodv1.SandboxServiceClient, sandbox, path string) ([]byte, error) {
	t.Helper()
	stream, err := c.ReadFile(ctx(t), &sandpodv1.ReadFileRequest{Sandbox: sandbox, Path: path})
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, msg.GetData()...)
	}
}

func wantCode(t *testing.T, err error, code codes.Code, msgPart string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
	if msgPart != "" && !strings.Contains(status.Convert(err).Message(), msgPart) {
		t.Fatalf("message %q does not mention %q", status.Convert(err).Message(), msgPart)
	}
}

// wantWhy checks the ErrorInfo reason of err (docs/api.md lists them).
func wantWhy(t *testing.T, err error, reason errinfo.Why) {
	t.Helper()
	if got := errinfo.Reason(err); got != reason {
		t.Fatalf("reason %q, want %s (%v)", got, reason, err)
	}
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getSandbox(t *testing.T, c sandpodv1.SandboxServiceClient, name string) (*sandpodv1.Sandbox, error) {
	resp, err := c.GetSandbox(ctx(t), &sandpodv1.GetSandboxRequest{Name: name})
	return resp.GetSandbox(), err
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

var defaultConfig = testserver.DefaultConfig

func startServer(t *testing.T, config string) *testserver.Server {
	return testserver.Start(t, testserver.Options{Config: config})
}
