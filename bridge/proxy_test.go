package bridge

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sandpod/sandpod/core/agent"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// An agent's RESOURCE_EXHAUSTED (its own limits, or gRPC's message size)
// reaches the caller as it is: only UNAVAILABLE and DEADLINE_EXCEEDED are
// explained as an unreachable or silent agent.
func TestAgentErrorKeepsResourceExhausted(t *testing.T) {
	for _, answered := range []bool{false, true} {
		in := status.Error(codes.ResourceExhausted, `write_file: "big": no space left in the sandbox`)
		err := agentErrorAfter("sb", in, answered)
		if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != status.Convert(in).Message() {
			t.Errorf("answered=%v: %v, want the agent's RESOURCE_EXHAUSTED unchanged", answered, err)
		}
	}
	if err := agentError("sb", status.Error(codes.Unavailable, "connection refused")); status.Code(err) != codes.Unavailable {
		t.Errorf("unavailable became %v", err)
	}
}

// Bad paging is refused at the edge, before any backend or agent is asked
// (the server here has none).
func TestListFilesChecksPagingAtTheEdge(t *testing.T) {
	s := New(nil)
	tok := agent.EncodeListToken("/workspace/a", "x")
	for name, tc := range map[string]struct {
		req   *sandpodv1.ListFilesRequest
		field string
	}{
		"negative page size": {&sandpodv1.ListFilesRequest{Sandbox: "sb", Path: "a", PageSize: -1}, "page_size"},
		"page size over max": {&sandpodv1.ListFilesRequest{Sandbox: "sb", Path: "a", PageSize: agent.MaxListPageSize + 1}, "page_size"},
		"garbage token":      {&sandpodv1.ListFilesRequest{Sandbox: "sb", Path: "a", PageToken: "not a token"}, "page_token"},
		"too short a token":  {&sandpodv1.ListFilesRequest{Sandbox: "sb", Path: "a", PageToken: "AAAA"}, "page_token"},
		"bad path":           {&sandpodv1.ListFilesRequest{Sandbox: "sb", Path: "../x", PageToken: tok}, "path"},
	} {
		_, err := s.ListFiles(context.Background(), tc.req)
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), tc.field+":") {
			t.Errorf("%s: %v, want INVALID_ARGUMENT starting with %q", name, err, tc.field)
		}
	}
}

// An older agent leaves exit_code 0 out of the wire; the bridge puts it
// back, so a JSON client reads {"exitCode": 0} whatever the agent's version.
func TestExitCodeIsPresentWhateverTheAgent(t *testing.T) {
	for name, tc := range map[string]struct {
		in   *sandpodv1.ExitStatus
		want int32
	}{
		"older agent, success": {&sandpodv1.ExitStatus{}, 0},
		"older agent, signal":  {&sandpodv1.ExitStatus{ExitCode: proto.Int32(-1), Signal: 9}, -1},
		"exit 3":               {&sandpodv1.ExitStatus{ExitCode: proto.Int32(3)}, 3},
	} {
		msg := &sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Exit{Exit: tc.in}}
		presentExitCode(msg)
		b, _ := protojson.Marshal(msg)
		if msg.GetExit().ExitCode == nil || msg.GetExit().GetExitCode() != tc.want {
			t.Errorf("%s: %s, want exitCode %d", name, b, tc.want)
		}
	}
	stdout := &sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Stdout{Stdout: []byte("x")}}
	presentExitCode(stdout) // other messages pass unchanged
	if stdout.GetExit() != nil {
		t.Error("a stdout message grew an exit status")
	}
}

// A terminal's size is checked at the edge, at start and at each resize;
// a resize on an exec without a terminal is FAILED_PRECONDITION.
func TestTerminalChecksAtTheEdge(t *testing.T) {
	size := func(r, c uint32) *sandpodv1.TerminalSize { return &sandpodv1.TerminalSize{Rows: r, Cols: c} }
	resize := func(sz *sandpodv1.TerminalSize) *sandpodv1.ExecRequest {
		return &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Resize{Resize: sz}}
	}
	pty := &sandpodv1.ExecStart{Shell: "sh", Pty: &sandpodv1.PtyRequest{Size: size(24, 80)}}
	plain := &sandpodv1.ExecStart{Shell: "sh"}
	for name, tc := range map[string]struct {
		start *sandpodv1.ExecStart
		msg   *sandpodv1.ExecRequest
		code  codes.Code
	}{
		"resize a terminal":       {pty, resize(size(50, 200)), codes.OK},
		"stdin is no resize":      {plain, &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte("x")}}, codes.OK},
		"resize without terminal": {plain, resize(size(50, 200)), codes.FailedPrecondition},
		"zero rows":               {pty, resize(size(0, 80)), codes.InvalidArgument},
		"too many columns":        {pty, resize(size(24, 1001)), codes.InvalidArgument},
		"resize without any size": {pty, resize(nil), codes.InvalidArgument},
	} {
		if err := checkResize(tc.start, tc.msg); status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %v", name, err, tc.code)
		}
	}
	for name, st := range map[string]*sandpodv1.ExecStart{
		"no size":  {Shell: "sh", Pty: &sandpodv1.PtyRequest{}},
		"huge":     {Shell: "sh", Pty: &sandpodv1.PtyRequest{Size: size(5000, 80)}},
		"bad term": {Shell: "sh", Pty: &sandpodv1.PtyRequest{Size: size(24, 80), Term: "a b"}},
	} {
		if err := checkExecStart(st); status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), "pty:") {
			t.Errorf("%s: %v, want INVALID_ARGUMENT on pty", name, err)
		}
	}
	if err := checkExecStart(pty); err != nil {
		t.Errorf("a good pty: %v", err)
	}
}
