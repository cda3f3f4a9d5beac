package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

var (
	errRequired = errors.New("is required")
	errNotUTF8  = errors.New("is not valid UTF-8")
)

func errTooLarge(n int) error {
	return fmt.Errorf("is %d bytes, the limit is %d (1 MiB); put large data in a file and read it from the code", n, MaxCodeBytes)
}

// Cell timing. InterruptGrace is how long an interrupted cell (timeout or
// a caller gone) has to stop before its context is killed; markerGrace how
// long output may trail the cell's end (it is already in the pipe, so this
// is only a safety net).
const (
	InterruptGrace = 3 * time.Second
	markerGrace    = 2 * time.Second
	deadDrain      = time.Second
)

// awaitDefault waits for the default context another call is starting.
func (s *Server) awaitDefault(ctx context.Context) (*codeContext, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		c, starting := s.code.get(DefaultCodeContext)
		if c != nil {
			return c, nil
		}
		if !starting {
			return nil, errinfo.Newf(codes.Unavailable, errinfo.ReasonCodeContextNotReady, "code: the default context failed to start in a concurrent call; retry")
		}
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
}

// runCell runs one cell in c, sending its output, results, error and done.
// The cell is run to its end even if the caller goes away (it is then
// interrupted), so the next cell starts on a quiet context.
func (s *Server) runCell(ctx context.Context, c *codeContext, req *sandpodv1.RunCodeRequest, send func(*sandpodv1.RunCodeResponse) error) error {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-c.dead:
		return contextNotFound(c.id)
	}
	defer func() { <-c.turn }()
	select {
	case <-c.dead:
		return contextNotFound(c.id)
	default:
	}
	c.busy.Store(true)
	defer c.busy.Store(false)
	began := time.Now()
	if err := writeFrame(c.req, map[string]string{"code": req.GetCode(), "marker": c.marker}); err != nil {
		c.kill()
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonCodeContextBroken, "code: context %q stopped taking code (%v); it was killed: create a new one", c.id, err)
	}

	// Sends go on after the caller left only to drain the context; their
	// errors are remembered, not acted on.
	var sendErr error
	emit := func(m *sandpodv1.RunCodeResponse) {
		if sendErr == nil {
			sendErr = send(m)
		}
	}
	done := &sandpodv1.CodeDone{ContextId: c.id}
	var cellErr *sandpodv1.CodeError
	var outBytes [3]int64
	resultBytes := 0
	marked := map[int]bool{}
	waitMarks := map[int]bool{}
	gotDone := false

	var timeout, grace, trailing <-chan time.Time
	if d := req.GetTimeout().AsDuration(); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	interrupted := false
	interrupt := func() {
		if interrupted {
			return
		}
		interrupted = true
		c.interrupt()
		g := time.NewTimer(InterruptGrace)
		grace = g.C
	}
	callerGone := ctx.Done()
	frames := c.frames

	for {
		if gotDone && allMarked(waitMarks, marked) {
			break
		}
		select {
		case ch := <-c.out:
			switch {
			case ch.marker:
				marked[ch.fd] = true
			case ch.eof:
				marked[ch.fd] = true // nothing more will come
			default:
				if marked[ch.fd] {
					continue // written after the cell ended (a background thread)
				}
				keep := min(int64(len(ch.data)), MaxCellOutput-outBytes[ch.fd])
				if keep < int64(len(ch.data)) {
					if ch.fd == 1 {
						done.StdoutTruncated = true
					} else {
						done.StderrTruncated = true
					}
				}
				if keep > 0 {
					outBytes[ch.fd] += keep
					if ch.fd == 1 {
						emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Stdout{Stdout: ch.data[:keep]}})
					} else {
						emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Stderr{Stderr: ch.data[:keep]}})
					}
				}
			}
		case f, ok := <-frames:
			if !ok {
				frames = nil // the executor is gone; c.dead follows
				continue
			}
			switch f.T {
			case "result":
				r := codeResult(f, MaxResultBytes)
				if n := resultSize(r); resultBytes+n > MaxCellResultBytes {
					r = &sandpodv1.CodeResult{IsMainResult: r.IsMainResult, Truncated: true, Data: map[string][]byte{
						"text/plain": []byte(fmt.Sprintf("[result dropped: the cell's results are over %d MiB]", MaxCellResultBytes>>20)),
					}}
				}
				resultBytes += resultSize(r)
				emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Result{Result: r}})
			case "error":
				cellErr = &sandpodv1.CodeError{Name: cutText(f.Name, 256), Value: cutText(f.Value, maxErrorText), Traceback: cutText(f.Traceback, maxErrorText)}
			case "done":
				gotDone = true
				done.ExecutionCount = f.Count
				c.count.Store(f.Count)
				for _, fd := range f.Marked {
					if fd == 1 || fd == 2 {
						waitMarks[fd] = true
					}
				}
				t := time.NewTimer(markerGrace)
				defer t.Stop()
				trailing = t.C
			}
		case <-trailing:
			waitMarks = nil // the markers are late: end without them
		case <-timeout:
			timeout = nil
			done.TimedOut = true
			interrupt()
		case <-callerGone:
			callerGone = nil
			interrupt()
		case <-grace:
			grace = nil
			c.kill()
		case <-c.dead:
			s.code.remove(c.id, c)
			// What it sent before it died (a display(), a figure) still counts.
			for f := range drainFrames(frames) {
				if f.T == "result" {
					r := codeResult(f, MaxResultBytes)
					if resultBytes+resultSize(r) <= MaxCellResultBytes {
						resultBytes += resultSize(r)
						emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Result{Result: r}})
					}
				}
			}
			drainDead(c, emit, &outBytes)
			done.ContextLost = true
			why := "its interpreter " + c.exitMsg + " (os._exit, a crash, or memory running out)"
			switch {
			case c.deleted.Load():
				why = "it was deleted while the cell ran"
			case done.TimedOut && c.killed.Load():
				why = fmt.Sprintf("the cell did not stop within %s of the interrupt, so its interpreter was killed", InterruptGrace)
			case c.killed.Load() && c.brokenFrame.Load() != nil:
				why = "its interpreter broke the executor's protocol (" + c.brokenFrame.Load().(string) + ") and was killed"
			}
			cellErr = &sandpodv1.CodeError{Name: "ContextDied", Value: fmt.Sprintf("code context %q is gone: %s; its state is lost. Create a new context (the default one is recreated by the next call without context_id).", c.id, why)}
			return finishCell(c, done, cellErr, began, emit, &sendErr)
		}
	}
	return finishCell(c, done, cellErr, began, emit, &sendErr)
}

func allMarked(want, got map[int]bool) bool {
	for fd := range want {
		if !got[fd] {
			return false
		}
	}
	return true
}

// drainFrames yields the frames a dead context left, until the pipe's end
// (or deadDrain).
func drainFrames(frames <-chan *execFrame) func(func(*execFrame) bool) {
	return func(yield func(*execFrame) bool) {
		if frames == nil {
			return
		}
		end := time.NewTimer(deadDrain)
		defer end.Stop()
		for {
			select {
			case f, ok := <-frames:
				if !ok || !yield(f) {
					return
				}
			case <-end.C:
				return
			}
		}
	}
}

// drainDead passes on the output a dead context left in its pipes.
func drainDead(c *codeContext, emit func(*sandpodv1.RunCodeResponse), outBytes *[3]int64) {
	end := time.NewTimer(deadDrain)
	defer end.Stop()
	eofs := 0
	for eofs < 2 {
		select {
		case ch := <-c.out:
			if ch.eof {
				eofs++
				continue
			}
			if ch.marker || len(ch.data) == 0 || outBytes[ch.fd]+int64(len(ch.data)) > MaxCellOutput {
				continue
			}
			outBytes[ch.fd] += int64(len(ch.data))
			if ch.fd == 1 {
				emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Stdout{Stdout: ch.data}})
			} else {
				emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Stderr{Stderr: ch.data}})
			}
		case <-end.C:
			return
		}
	}
}

func finishCell(c *codeContext, done *sandpodv1.CodeDone, cellErr *sandpodv1.CodeError, began time.Time,
	emit func(*sandpodv1.RunCodeResponse), sendErr *error) error {
	if cellErr != nil {
		emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Error{Error: cellErr}})
	}
	if done.ExecutionCount == 0 {
		done.ExecutionCount = c.count.Load()
	}
	done.Duration = durationpb.New(time.Since(began))
	emit(&sandpodv1.RunCodeResponse{Msg: &sandpodv1.RunCodeResponse_Done{Done: done}})
	return *sendErr
}
