package e2b

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	"github.com/sandpod/sandpod/bridge/e2b/envd/process"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestEndOf(t *testing.T) {
	timedOut := "the command's timeout ran out"
	for name, tc := range map[string]struct {
		in   *sandpodv1.ExitStatus
		want *process.ProcessEvent_EndEvent
	}{
		"success":   {&sandpodv1.ExitStatus{ExitCode: proto.Int32(0)}, &process.ProcessEvent_EndEvent{ExitCode: 0, Exited: true, Status: "exit status 0"}},
		"failure":   {&sandpodv1.ExitStatus{ExitCode: proto.Int32(3)}, &process.ProcessEvent_EndEvent{ExitCode: 3, Exited: true, Status: "exit status 3"}},
		"killed":    {&sandpodv1.ExitStatus{ExitCode: proto.Int32(-1), Signal: 9}, &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: killed"}},
		"sigterm":   {&sandpodv1.ExitStatus{ExitCode: proto.Int32(-1), Signal: 15}, &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: terminated"}},
		"timeout":   {&sandpodv1.ExitStatus{ExitCode: proto.Int32(124), TimedOut: true}, &process.ProcessEvent_EndEvent{ExitCode: 124, Exited: true, Status: "exit status 124", Error: &timedOut}},
		"old agent": {&sandpodv1.ExitStatus{}, &process.ProcessEvent_EndEvent{ExitCode: 0, Exited: true, Status: "exit status 0"}},
	} {
		if diff := cmp.Diff(tc.want, endOf(tc.in), protocmp.Transform()); diff != "" {
			t.Errorf("%s: endOf (-want +got):\n%s", name, diff)
		}
	}
}

func TestEventOf(t *testing.T) {
	stdout := &sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Stdout{Stdout: []byte("o")}}
	if got := eventOf(stdout, false).GetData().GetStdout(); string(got) != "o" {
		t.Errorf("stdout without a terminal: %q", got)
	}
	if got := eventOf(stdout, true).GetData().GetPty(); string(got) != "o" {
		t.Errorf("stdout on a terminal is pty data: %q", got)
	}
	stderr := &sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_Stderr{Stderr: []byte("e")}}
	if got := eventOf(stderr, false).GetData().GetStderr(); string(got) != "e" {
		t.Errorf("stderr: %q", got)
	}
	if ev := eventOf(&sandpodv1.ExecResponse{Msg: &sandpodv1.ExecResponse_StdinAcked{StdinAcked: 5}}, false); ev != nil {
		t.Errorf("a stdin acknowledgement has no envd event, got %v", ev)
	}
	if end := endOnError(errors.New("boom")).GetEnd(); end.GetError() == "" || end.GetExitCode() != -1 {
		t.Errorf("a broken stream ends with an error: %v", end)
	}
}

func TestProcessRegistry(t *testing.T) {
	ps := newProcesses()
	a := &proc{sbx: "ns/a", pid: 7, tag: "web", cancel: func() {}}
	b := &proc{sbx: "ns/a", pid: 3, cancel: func() {}}
	ps.add(a)
	ps.add(b)
	if got := ps.list("ns/a"); len(got) != 2 || got[0] != b || got[1] != a {
		t.Errorf("list is by pid: %v", got)
	}
	if ps.find("ns/a", &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: "web"}}) != a {
		t.Error("find by tag")
	}
	if ps.find("ns/b", &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: 7}}) != nil {
		t.Error("another sandbox's pid must not be found")
	}
	f := a.follow()
	a.end(nil, ps)
	if _, ok := <-f.ch; ok {
		t.Error("a follower's channel closes when the command ends")
	}
	if a.follow() != nil || ps.find("ns/a", &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: 7}}) != nil {
		t.Error("an ended command is gone")
	}
}
