package e2b

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/sandpod/sandpod/bridge/e2b/envd/process"
	"github.com/sandpod/sandpod/bridge/e2b/envd/process/processconnect"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// stdinChunk caps one stdin message to sandpod: below the smallest stdin
// window a server announces (64 KiB).
const stdinChunk = 32 << 10

// processService is envd's process.Process over sandpod's Exec.
type processService struct{ s *Server }

var _ processconnect.ProcessHandler = processService{}

// sandbox is the sandbox a call is for: E2b-Sandbox-Id, in the front
// door's namespace.
func (s *Server) sandbox(h http.Header) (ns, name, key string) {
	name = h.Get("E2b-Sandbox-Id")
	return s.opts.Namespace, name, sbxKey(s.opts.Namespace, name)
}

// execStart is the sandpod command for envd's Start: argv as given, the
// working directory mapped (E2B's default is the home directory), on a
// terminal when asked for one.
func execStart(ns, name string, req *process.StartRequest) (*sandpodv1.ExecStart, error) {
	cfg := req.GetProcess()
	if cfg.GetCmd() == "" {
		return nil, errors.New("process.cmd is required")
	}
	st := &sandpodv1.ExecStart{
		Sandbox:    name,
		Namespace:  ns,
		Argv:       append([]string{cfg.GetCmd()}, cfg.GetArgs()...),
		Env:        cfg.GetEnvs(),
		WorkingDir: toSandpodPath(cfg.GetCwd()),
	}
	if req.Pty != nil {
		sz := req.GetPty().GetSize()
		st.Pty = &sandpodv1.PtyRequest{Size: &sandpodv1.TerminalSize{Rows: sz.GetRows(), Cols: sz.GetCols()}}
	}
	return st, nil
}

func (p processService) Start(ctx context.Context, req *connect.Request[process.StartRequest], out *connect.ServerStream[process.StartResponse]) error {
	s := p.s
	ns, name, key := s.sandbox(req.Header())
	st, err := execStart(ns, name, req.Msg)
	if err != nil {
		return connect.NewError(connect.CodeInvalidArgument, err)
	}
	// The command outlives this call: its stream has a context of its own,
	// with the caller's token.
	ectx, cancel := context.WithCancel(context.WithoutCancel(withToken(ctx, req.Header())))
	stream, err := s.api.Exec(ectx)
	if err == nil {
		err = stream.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: st}})
	}
	var first *sandpodv1.ExecResponse
	if err == nil {
		first, err = stream.Recv()
	}
	if err != nil {
		cancel()
		return connectError(err)
	}
	started := first.GetStarted()
	if started == nil {
		cancel()
		return connect.NewError(connect.CodeInternal, errors.New("the command's stream did not start with its pid"))
	}
	pr := &proc{sbx: key, pid: uint32(started.GetPid()), tag: req.Msg.GetTag(), cfg: req.Msg.GetProcess(), pty: st.Pty != nil, stream: stream, cancel: cancel}
	if !req.Msg.GetStdin() && !pr.pty {
		// envd gives a command no standard input unless asked to. A
		// command that has already ended has closed the stream (io.EOF);
		// its exit status is still to be read.
		_ = pr.send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_CloseStdin{CloseStdin: true}})
	}
	f := pr.follow()
	s.procs.add(pr)
	go pr.pump(s.procs)
	send := func(ev *process.ProcessEvent) error { return out.Send(&process.StartResponse{Event: ev}) }
	return s.followProcess(ctx, req.Header(), pr, f, send)
}

func (p processService) Connect(ctx context.Context, req *connect.Request[process.ConnectRequest], out *connect.ServerStream[process.ConnectResponse]) error {
	// Following a command reads its output: the caller must be allowed to
	// use the sandbox, as for input and signals.
	pr, err := p.target(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return err
	}
	// The command's Exec stream is counted once, for its starter; each
	// follower holds a stream of its own.
	if p.s.opts.Streams != nil {
		release, err := p.s.opts.Streams(ctx, apiKey(req.Header()))
		if err != nil {
			return connectError(err)
		}
		defer release()
	}
	f := pr.follow()
	if f == nil {
		return processNotFound(req.Msg.GetProcess())
	}
	send := func(ev *process.ProcessEvent) error { return out.Send(&process.ConnectResponse{Event: ev}) }
	return p.s.followProcess(ctx, req.Header(), pr, f, send)
}

// followProcess sends the start event and then the command's events until
// it ends or the caller leaves (the command keeps running), with a
// keepalive event as often as the caller's Keepalive-Ping-Interval asks.
func (s *Server) followProcess(ctx context.Context, h http.Header, pr *proc, f *follower, send func(*process.ProcessEvent) error) error {
	defer pr.unfollow(f)
	if err := send(&process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pr.pid}}}); err != nil {
		return err
	}
	var tick <-chan time.Time
	if secs, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval")); err == nil && secs > 0 {
		t := time.NewTicker(time.Duration(secs) * time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case ev, ok := <-f.ch:
			if !ok {
				if pr.gone.Load() {
					return connect.NewError(connect.CodeUnavailable, errors.New("the sandbox was deleted while the command ran"))
				}
				return nil
			}
			if err := send(ev); err != nil {
				return err
			}
			if ev.GetEnd() != nil {
				return nil
			}
		case <-tick:
			if err := send(&process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}); err != nil {
				return err
			}
		case <-ctx.Done():
			return connectError(ctx.Err())
		}
	}
}

func processNotFound(sel *process.ProcessSelector) error {
	what := "process with pid " + strconv.FormatUint(uint64(sel.GetPid()), 10)
	if t, ok := sel.GetSelector().(*process.ProcessSelector_Tag); ok {
		what = "process with tag " + strconv.Quote(t.Tag)
	}
	return connect.NewError(connect.CodeNotFound, errors.New(what+" not found"))
}

func (p processService) List(ctx context.Context, req *connect.Request[process.ListRequest]) (*connect.Response[process.ListResponse], error) {
	_, name, key := p.s.sandbox(req.Header())
	// The caller must be allowed to see the sandbox.
	if _, err := p.s.lookup(withToken(ctx, req.Header()), name); err != nil {
		return nil, connectError(err)
	}
	res := &process.ListResponse{}
	for _, pr := range p.s.procs.list(key) {
		info := &process.ProcessInfo{Config: pr.cfg, Pid: pr.pid}
		if pr.tag != "" {
			info.Tag = &pr.tag
		}
		res.Processes = append(res.Processes, info)
	}
	return connect.NewResponse(res), nil
}

// target is the running command a call names, after checking that the
// caller may use the sandbox.
func (p processService) target(ctx context.Context, h http.Header, sel *process.ProcessSelector) (*proc, error) {
	_, name, key := p.s.sandbox(h)
	if _, err := p.s.lookup(withToken(ctx, h), name); err != nil {
		return nil, connectError(err)
	}
	pr := p.s.procs.find(key, sel)
	if pr == nil {
		return nil, processNotFound(sel)
	}
	return pr, nil
}

// input sends bytes to a command's standard input (or terminal).
func (pr *proc) input(in *process.ProcessInput) error {
	data := in.GetStdin()
	if data == nil {
		data = in.GetPty()
	}
	for len(data) > 0 {
		n := min(len(data), stdinChunk)
		if err := pr.send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: data[:n]}}); err != nil {
			return connectError(err)
		}
		data = data[n:]
	}
	return nil
}

func (p processService) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	pr, err := p.target(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := pr.input(req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

func (p processService) StreamInput(ctx context.Context, in *connect.ClientStream[process.StreamInputRequest]) (*connect.Response[process.StreamInputResponse], error) {
	var pr *proc
	for in.Receive() {
		switch ev := in.Msg().GetEvent().(type) {
		case *process.StreamInputRequest_Start:
			var err error
			if pr, err = p.target(ctx, in.RequestHeader(), ev.Start.GetProcess()); err != nil {
				return nil, err
			}
		case *process.StreamInputRequest_Data:
			if pr == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the first message of StreamInput must be start, naming the process"))
			}
			if err := pr.input(ev.Data.GetInput()); err != nil {
				return nil, err
			}
		}
	}
	if err := in.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.StreamInputResponse{}), nil
}

func (p processService) SendSignal(ctx context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	pr, err := p.target(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	sig := int32(req.Msg.GetSignal())
	if sig == 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("signal is required (SIGTERM or SIGKILL)"))
	}
	if err := pr.send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Signal{Signal: sig}}); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

func (p processService) CloseStdin(ctx context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	pr, err := p.target(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	msg := &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_CloseStdin{CloseStdin: true}}
	if pr.pty {
		msg = &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte{4}}} // Ctrl-D
	}
	if err := pr.send(msg); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

func (p processService) Update(ctx context.Context, req *connect.Request[process.UpdateRequest]) (*connect.Response[process.UpdateResponse], error) {
	pr, err := p.target(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		if !pr.pty {
			return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process has no terminal to resize"))
		}
		sz := req.Msg.GetPty().GetSize()
		if err := pr.send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Resize{Resize: &sandpodv1.TerminalSize{Rows: sz.GetRows(), Cols: sz.GetCols()}}}); err != nil {
			return nil, connectError(err)
		}
	}
	return connect.NewResponse(&process.UpdateResponse{}), nil
}
