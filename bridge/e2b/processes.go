package e2b

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/bridge/e2b/envd/process"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// processes are the commands started through envd's Start, by sandbox and
// pid. envd's processes outlive the call that started them (a background
// command, a reconnect by pid, input and signals from other calls), where a
// sandpod Exec lives as long as its stream: the front door holds each
// command's Exec stream, under a context of its own, until the command
// ends, and fans its output out to the calls following it. The streams are
// the front door's: a restart of sandpod ends them, and their commands.
type processes struct {
	mu    sync.Mutex
	bySbx map[string]map[uint32]*proc
}

func newProcesses() *processes { return &processes{bySbx: map[string]map[uint32]*proc{}} }

// proc is one running command.
type proc struct {
	sbx    string
	pid    uint32
	tag    string
	cfg    *process.ProcessConfig
	pty    bool
	stream sandpodv1.SandboxService_ExecClient
	cancel context.CancelFunc

	sendMu sync.Mutex // one Send at a time on stream

	// gone: the sandbox was deleted through the front door; followers get
	// an error rather than an exit status, as from envd in a killed sandbox.
	gone atomic.Bool

	mu    sync.Mutex
	subs  map[*follower]struct{}
	ended bool
}

// follower is one call receiving a command's events.
type follower struct {
	ch   chan *process.ProcessEvent
	gone chan struct{}
}

func sbxKey(ns, name string) string { return ns + "/" + name }

func (ps *processes) add(p *proc) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	m := ps.bySbx[p.sbx]
	if m == nil {
		m = map[uint32]*proc{}
		ps.bySbx[p.sbx] = m
	}
	m[p.pid] = p
}

func (ps *processes) remove(p *proc) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if m := ps.bySbx[p.sbx]; m != nil && m[p.pid] == p {
		delete(m, p.pid)
		if len(m) == 0 {
			delete(ps.bySbx, p.sbx)
		}
	}
}

// forget ends the streams of a deleted sandbox's commands.
func (ps *processes) forget(ns, name string) {
	ps.mu.Lock()
	m := ps.bySbx[sbxKey(ns, name)]
	ps.mu.Unlock()
	for _, p := range m {
		p.gone.Store(true)
		p.cancel()
	}
}

// list is a sandbox's running commands, by pid.
func (ps *processes) list(sbx string) []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*proc, 0, len(ps.bySbx[sbx]))
	for _, p := range ps.bySbx[sbx] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// find is the command a selector names (a pid or a tag), nil if none runs.
func (ps *processes) find(sbx string, sel *process.ProcessSelector) *proc {
	for _, p := range ps.list(sbx) {
		switch s := sel.GetSelector().(type) {
		case *process.ProcessSelector_Pid:
			if p.pid == s.Pid {
				return p
			}
		case *process.ProcessSelector_Tag:
			if p.tag != "" && p.tag == s.Tag {
				return p
			}
		}
	}
	return nil
}

func (p *proc) send(req *sandpodv1.ExecRequest) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	return p.stream.Send(req)
}

// follow adds a follower; nil when the command has ended.
func (p *proc) follow() *follower {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	if p.subs == nil {
		p.subs = map[*follower]struct{}{}
	}
	f := &follower{ch: make(chan *process.ProcessEvent, 64), gone: make(chan struct{})}
	p.subs[f] = struct{}{}
	return f
}

func (p *proc) unfollow(f *follower) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.subs[f]; ok {
		delete(p.subs, f)
		close(f.gone)
	}
}

// broadcast hands ev to every follower; a follower that left is skipped.
// A slow follower slows the command's output down, as a slow reader of
// envd's stream does.
func (p *proc) broadcast(ev *process.ProcessEvent) {
	p.mu.Lock()
	subs := make([]*follower, 0, len(p.subs))
	for f := range p.subs {
		subs = append(subs, f)
	}
	p.mu.Unlock()
	for _, f := range subs {
		select {
		case f.ch <- ev:
		case <-f.gone:
		}
	}
}

// pump reads the Exec stream until the command ends, then drops it from
// the registry.
func (p *proc) pump(ps *processes) {
	defer p.cancel()
	for {
		res, err := p.stream.Recv()
		if err != nil {
			var last *process.ProcessEvent
			if !p.gone.Load() {
				last = endOnError(err)
			}
			p.end(last, ps)
			return
		}
		if ev := eventOf(res, p.pty); ev != nil {
			p.broadcast(ev)
			if ev.GetEnd() != nil {
				p.end(nil, ps)
				return
			}
		}
	}
}

func (p *proc) end(last *process.ProcessEvent, ps *processes) {
	ps.remove(p)
	if last != nil {
		p.broadcast(last)
	}
	p.mu.Lock()
	p.ended = true
	for f := range p.subs {
		close(f.ch)
		delete(p.subs, f)
	}
	p.mu.Unlock()
}

// eventOf is an Exec answer as envd's process event; nil for what envd
// has no event for (stdin acknowledgements).
func eventOf(res *sandpodv1.ExecResponse, pty bool) *process.ProcessEvent {
	data := func(out *process.ProcessEvent_DataEvent) *process.ProcessEvent {
		return &process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: out}}
	}
	switch m := res.GetMsg().(type) {
	case *sandpodv1.ExecResponse_Stdout:
		if pty {
			return data(&process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Pty{Pty: m.Stdout}})
		}
		return data(&process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Stdout{Stdout: m.Stdout}})
	case *sandpodv1.ExecResponse_Stderr:
		return data(&process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Stderr{Stderr: m.Stderr}})
	case *sandpodv1.ExecResponse_Exit:
		return &process.ProcessEvent{Event: &process.ProcessEvent_End{End: endOf(m.Exit)}}
	}
	return nil
}

// endOf is envd's end event for an exit status: the status reads as Go's
// os.ProcessState does ("exit status 1", "signal: killed"), as envd's.
func endOf(x *sandpodv1.ExitStatus) *process.ProcessEvent_EndEvent {
	end := &process.ProcessEvent_EndEvent{ExitCode: x.GetExitCode(), Exited: x.GetSignal() == 0}
	switch {
	case x.GetSignal() != 0:
		end.ExitCode = -1
		end.Status = "signal: " + signalName(x.GetSignal())
	case x.GetTimedOut():
		end.Status = fmt.Sprintf("exit status %d", x.GetExitCode())
		msg := "the command's timeout ran out"
		end.Error = &msg
	default:
		end.Status = fmt.Sprintf("exit status %d", x.GetExitCode())
	}
	return end
}

func signalName(sig int32) string {
	switch sig {
	case 9:
		return "killed"
	case 15:
		return "terminated"
	case 2:
		return "interrupt"
	case 1:
		return "hangup"
	}
	return fmt.Sprintf("signal %d", sig)
}

// endOnError is the end event of a stream that broke before the command's
// exit status came (the sandbox was deleted, sandpod stopped).
func endOnError(err error) *process.ProcessEvent {
	msg := "the command's stream ended without an exit status"
	if err != io.EOF {
		msg = "the command's stream ended: " + status.Convert(err).Message()
	}
	return &process.ProcessEvent{Event: &process.ProcessEvent_End{End: &process.ProcessEvent_EndEvent{
		ExitCode: -1, Status: "error", Error: &msg,
	}}}
}
