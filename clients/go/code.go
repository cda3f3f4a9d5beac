package sandpod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Code contexts: long-lived python3 interpreters in a sandbox that keep
// their state between RunCode calls.

var (
	// ErrCodeContextNotFound is a call naming a code context that does not
	// exist (never created, deleted, or its interpreter died): the
	// server's reason CODE_CONTEXT_NOT_FOUND. It also matches ErrNotFound.
	ErrCodeContextNotFound = fmt.Errorf("code context %w", ErrNotFound)
	// ErrCodeFailed is matched by the *CodeRunError of a cell that raised.
	ErrCodeFailed = errors.New("code raised an exception")
	// ErrCodeContextLost is matched by the *CodeRunError of a cell whose
	// interpreter died: its state is gone. It also matches ErrCodeFailed.
	ErrCodeContextLost = fmt.Errorf("code context lost: %w", ErrCodeFailed)
)

const reasonCodeContextNotFound = "CODE_CONTEXT_NOT_FOUND"

// CodeOption configures RunCode.
type CodeOption interface{ applyCode(*codeConfig) }

type codeConfig struct {
	contextID string
	language  string
	timeout   time.Duration
	env       map[string]string
	onStdout  func(string)
	onStderr  func(string)
	onResult  func(CodeResult)
}

type codeOptionFunc func(*codeConfig)

func (f codeOptionFunc) applyCode(c *codeConfig) { f(c) }

func (e EnvOption) applyCode(c *codeConfig) {
	if c.env == nil {
		c.env = map[string]string{}
	}
	for k, v := range e {
		c.env[k] = v
	}
}

// InCodeContext runs the code in the context with this id instead of the
// sandbox's default context.
func InCodeContext(id string) CodeOption {
	return codeOptionFunc(func(c *codeConfig) { c.contextID = id })
}

// WithLanguage names the language ("python", the only one and the
// default).
func WithLanguage(lang string) CodeOption {
	return codeOptionFunc(func(c *codeConfig) { c.language = lang })
}

// WithCodeTimeout interrupts the cell after d (KeyboardInterrupt; the
// context keeps its state). The Execution then has TimedOut set. The call
// itself is bounded by ctx.
func WithCodeTimeout(d time.Duration) CodeOption {
	return codeOptionFunc(func(c *codeConfig) { c.timeout = d })
}

// OnStdout and OnStderr are called with output as it comes; OnResult with
// each result.
func OnStdout(f func(string)) CodeOption {
	return codeOptionFunc(func(c *codeConfig) { c.onStdout = f })
}

// OnStderr: see OnStdout.
func OnStderr(f func(string)) CodeOption {
	return codeOptionFunc(func(c *codeConfig) { c.onStderr = f })
}

// OnResult: see OnStdout.
func OnResult(f func(CodeResult)) CodeOption {
	return codeOptionFunc(func(c *codeConfig) { c.onResult = f })
}

// CodeResult is one MIME bundle: the value of the cell's last expression
// (IsMainResult) or something displayed (display(), a matplotlib figure).
// Data maps a MIME type to its value: UTF-8 text for text types and
// application/json, raw bytes for image/png and image/jpeg.
type CodeResult struct {
	Data         map[string][]byte
	IsMainResult bool
	// Truncated: some representations were over the size limit.
	Truncated bool
}

// Text is the text/plain representation ("" if none).
func (r CodeResult) Text() string { return string(r.Data["text/plain"]) }

// PNG is the image/png representation (nil if none).
func (r CodeResult) PNG() []byte { return r.Data["image/png"] }

// HTML is the text/html representation ("" if none).
func (r CodeResult) HTML() string { return string(r.Data["text/html"]) }

// Formats lists the MIME types present, sorted.
func (r CodeResult) Formats() []string {
	out := make([]string, 0, len(r.Data))
	for m := range r.Data {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// ExecutionError is the exception a cell raised. Name is
// "KeyboardInterrupt" after a timeout and "ContextDied" when the
// interpreter exited or was killed.
type ExecutionError struct {
	Name, Value, Traceback string
}

// Execution is what RunCode returns.
type Execution struct {
	Stdout, Stderr  string
	Results         []CodeResult
	Error           *ExecutionError
	ContextID       string
	ExecutionCount  int64
	Duration        time.Duration
	TimedOut        bool
	ContextLost     bool
	StdoutTruncated bool
	StderrTruncated bool
}

// Text is the text/plain of the cell's last expression ("" if none).
func (e *Execution) Text() string {
	for _, r := range e.Results {
		if r.IsMainResult {
			return r.Text()
		}
	}
	return ""
}

// Err returns a *CodeRunError if the cell raised (or its context died),
// nil otherwise.
func (e *Execution) Err() error {
	if e.Error == nil {
		return nil
	}
	return &CodeRunError{Execution: e}
}

// CodeRunError is a cell that raised; it matches ErrCodeFailed, and
// ErrCodeContextLost when the interpreter died.
type CodeRunError struct {
	Execution *Execution
}

func (e *CodeRunError) Error() string {
	x := e.Execution.Error
	msg := x.Name + ": " + x.Value
	if tb := strings.TrimSpace(x.Traceback); tb != "" {
		msg += "\n" + tb
	}
	return msg
}

// Is matches ErrCodeFailed, and ErrCodeContextLost for a lost context.
func (e *CodeRunError) Is(target error) bool {
	return target == ErrCodeFailed || (target == ErrCodeContextLost && e.Execution.ContextLost)
}

// RunCode runs a cell of Python in a code context that keeps its state
// between calls (the sandbox's default context unless InCodeContext).
// A cell that raises is not an error of the call: see Execution.Err. The
// call is never retried.
func (s *Sandbox) RunCode(ctx context.Context, code string, opts ...CodeOption) (*Execution, error) {
	cfg := &codeConfig{}
	for _, o := range opts {
		o.applyCode(cfg)
	}
	if err := s.c.check(); err != nil {
		return nil, err
	}
	if err := s.c.awaitServer(ctx, "run_code"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a caller that stops reading interrupts the cell
	stream, err := s.c.rpc.RunCode(ctx, &pb.RunCodeRequest{
		Sandbox: s.name, Namespace: s.ns, Code: code, Language: cfg.language,
		ContextId: cfg.contextID, Timeout: durationToProto(cfg.timeout), Env: cfg.env,
	})
	if err != nil {
		return nil, wrapError("run_code", err)
	}
	var dec executionDecoder
	dec.cfg = cfg
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, wrapError("run_code", fmt.Errorf("the stream ended without its done message"))
		}
		if err != nil {
			return nil, s.observe(ctx, wrapError("run_code", err))
		}
		if dec.feed(msg) {
			return &dec.ex, s.observe(ctx, nil)
		}
	}
}

// executionDecoder builds an Execution from RunCode responses.
type executionDecoder struct {
	cfg      *codeConfig
	ex       Execution
	out, err strings.Builder
	// partial UTF-8 characters held back between chunks
	heldOut, heldErr []byte
}

// splitUTF8 returns the text of held+chunk up to a character split at its
// end, and that split character's bytes (kept for the next chunk).
func splitUTF8(held, chunk []byte) (string, []byte) {
	b := append(held, chunk...)
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			break // ASCII: nothing split
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return string(b[:len(b)-i]), append([]byte(nil), b[len(b)-i:]...)
			}
			break
		}
	}
	return string(b), nil
}

func (d *executionDecoder) feed(m *pb.RunCodeResponse) bool {
	switch x := m.GetMsg().(type) {
	case *pb.RunCodeResponse_Stdout:
		var t string
		t, d.heldOut = splitUTF8(d.heldOut, x.Stdout)
		d.out.WriteString(t)
		if d.cfg.onStdout != nil && t != "" {
			d.cfg.onStdout(t)
		}
	case *pb.RunCodeResponse_Stderr:
		var t string
		t, d.heldErr = splitUTF8(d.heldErr, x.Stderr)
		d.err.WriteString(t)
		if d.cfg.onStderr != nil && t != "" {
			d.cfg.onStderr(t)
		}
	case *pb.RunCodeResponse_Result:
		r := CodeResult{Data: x.Result.GetData(), IsMainResult: x.Result.GetIsMainResult(), Truncated: x.Result.GetTruncated()}
		d.ex.Results = append(d.ex.Results, r)
		if d.cfg.onResult != nil {
			d.cfg.onResult(r)
		}
	case *pb.RunCodeResponse_Error:
		d.ex.Error = &ExecutionError{Name: x.Error.GetName(), Value: x.Error.GetValue(), Traceback: x.Error.GetTraceback()}
	case *pb.RunCodeResponse_Done:
		dn := x.Done
		d.out.Write(d.heldOut)
		d.err.Write(d.heldErr)
		d.ex.Stdout, d.ex.Stderr = d.out.String(), d.err.String()
		d.ex.ContextID, d.ex.ExecutionCount = dn.GetContextId(), dn.GetExecutionCount()
		d.ex.Duration = dn.GetDuration().AsDuration()
		d.ex.TimedOut, d.ex.ContextLost = dn.GetTimedOut(), dn.GetContextLost()
		d.ex.StdoutTruncated, d.ex.StderrTruncated = dn.GetStdoutTruncated(), dn.GetStderrTruncated()
		return true
	}
	return false
}

// CodeContextInfo describes a code context.
type CodeContextInfo struct {
	ID             string
	Language       string
	Dir            string
	CreateTime     time.Time
	ExecutionCount int64
	Busy           bool
}

func codeContextInfo(c *pb.CodeContext) CodeContextInfo {
	return CodeContextInfo{
		ID: c.GetId(), Language: c.GetLanguage(), Dir: c.GetCwd(), CreateTime: c.GetCreateTime().AsTime(),
		ExecutionCount: c.GetExecutionCount(), Busy: c.GetBusy(),
	}
}

// CodeContextSpec is what CreateCodeContext makes; every field is optional.
type CodeContextSpec struct {
	// ID is generated when empty; ErrAlreadyExists if taken.
	ID string
	// Dir is the working directory, relative to the sandbox's root.
	Dir string
	Env map[string]string
}

// CodeContext is a handle to a code context of a sandbox.
type CodeContext struct {
	s  *Sandbox
	ID string
}

// CodeContext returns a handle to an existing context, without a call.
func (s *Sandbox) CodeContext(id string) *CodeContext { return &CodeContext{s: s, ID: id} }

// CreateCodeContext starts a new interpreter (at most 8 per sandbox:
// ErrResourceExhausted). Not retried: a retry of a create that went
// through would make a second one.
func (s *Sandbox) CreateCodeContext(ctx context.Context, spec CodeContextSpec) (*CodeContext, CodeContextInfo, error) {
	if err := s.c.check(); err != nil {
		return nil, CodeContextInfo{}, err
	}
	if err := s.c.awaitServer(ctx, "create_code_context"); err != nil {
		return nil, CodeContextInfo{}, err
	}
	resp, err := s.c.rpc.CreateCodeContext(ctx, &pb.CreateCodeContextRequest{
		Sandbox: s.name, Namespace: s.ns, ContextId: spec.ID, Cwd: spec.Dir, Env: spec.Env,
	})
	if err := s.observe(ctx, wrapError("create_code_context", err)); err != nil {
		return nil, CodeContextInfo{}, err
	}
	info := codeContextInfo(resp.GetContext())
	return &CodeContext{s: s, ID: info.ID}, info, nil
}

// CodeContexts lists the sandbox's live code contexts, by id.
func (s *Sandbox) CodeContexts(ctx context.Context) ([]CodeContextInfo, error) {
	var resp *pb.ListCodeContextsResponse
	err := s.c.retry(ctx, "list_code_contexts", func(ctx context.Context, _ int) (err error) {
		resp, err = s.c.rpc.ListCodeContexts(ctx, &pb.ListCodeContextsRequest{Sandbox: s.name, Namespace: s.ns})
		return err
	})
	if err := s.observe(ctx, err); err != nil {
		return nil, err
	}
	out := make([]CodeContextInfo, 0, len(resp.GetContexts()))
	for _, c := range resp.GetContexts() {
		out = append(out, codeContextInfo(c))
	}
	return out, nil
}

// RunCode runs code in this context; see Sandbox.RunCode.
func (c *CodeContext) RunCode(ctx context.Context, code string, opts ...CodeOption) (*Execution, error) {
	return c.s.RunCode(ctx, code, append(opts, InCodeContext(c.ID))...)
}

// Delete kills the context's interpreter; its state is gone. A retry that
// finds it gone counts as success.
func (c *CodeContext) Delete(ctx context.Context) error {
	s := c.s
	return s.c.retry(ctx, "delete_code_context", func(ctx context.Context, attempt int) error {
		_, err := s.c.rpc.DeleteCodeContext(ctx, &pb.DeleteCodeContextRequest{Sandbox: s.name, Namespace: s.ns, ContextId: c.ID})
		if attempt > 1 && errors.Is(wrapError("", err), ErrCodeContextNotFound) {
			return nil
		}
		return err
	})
}
