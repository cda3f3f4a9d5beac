package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// maxTimeoutSeconds bounds a command's or a cell's timeout (an hour): a
// tool call is a turn of a conversation, not a batch job (start one in
// the background with run_command and `setsid ... &`).
const maxTimeoutSeconds = 3600

const defaultTimeoutSeconds = 120

type runCommandArgs struct {
	Command        string            `json:"command,omitempty" jsonschema:"A shell command line, run with /bin/sh -c (pipes, redirections, &&). Give this or argv."`
	Argv           []string          `json:"argv,omitempty" jsonschema:"A program and its arguments, run without a shell. Give this or command."`
	Cwd            string            `json:"cwd,omitempty" jsonschema:"Working directory (default: the sandbox's working directory)."`
	Env            map[string]string `json:"env,omitempty" jsonschema:"Extra environment variables for this command."`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty" jsonschema:"Kill the command (and its process group) after this many seconds."`
	Sandbox        string            `json:"sandbox,omitempty"`
}

type runCommandResult struct {
	Sandbox         string `json:"sandbox"`
	ExitCode        int    `json:"exit_code" jsonschema:"The command's exit code; -1 when a signal ended it."`
	Signal          int    `json:"signal,omitempty" jsonschema:"The signal that ended it, if one did."`
	TimedOut        bool   `json:"timed_out" jsonschema:"It was killed at timeout_seconds."`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated" jsonschema:"stdout was cut to its first and last bytes (the text says how much)."`
	StderrTruncated bool   `json:"stderr_truncated"`
	DurationMS      int64  `json:"duration_ms"`
}

func (s *Server) addRunCommand() {
	addTool(s, &sdk.Tool{
		Name: "run_command",
		Description: fmt.Sprintf("Run a command in a sandbox and wait for it: a shell command line (command) or a program with arguments (argv). "+
			"Returns the exit code, stdout and stderr, each cut to its first and last %d KiB when longer. A non-zero exit code is a result, not an error. "+
			"Standard input is empty. For a server that must keep running, start it in the background: `setsid CMD >/tmp/log 2>&1 &`.", MaxStreamBytes>>10),
		InputSchema: inputSchema[runCommandArgs](map[string]bound{
			"timeout_seconds": {min: 1, max: maxTimeoutSeconds, def: defaultTimeoutSeconds},
		}, nil),
		Annotations: destructive,
	}, s.runCommandTool)
}

// commandStart checks that a call gives exactly one of command and argv.
func commandStart(in runCommandArgs) error {
	switch {
	case in.Command == "" && len(in.Argv) == 0:
		return errors.New("give command (a shell command line) or argv (a program and its arguments)")
	case in.Command != "" && len(in.Argv) > 0:
		return errors.New("give command or argv, not both")
	case len(in.Argv) > 0 && in.Argv[0] == "":
		return errors.New("argv[0]: the program to run is empty")
	}
	return nil
}

func (s *Server) runCommandTool(ctx context.Context, req *sdk.CallToolRequest, in runCommandArgs) (*sdk.CallToolResult, runCommandResult, error) {
	if err := commandStart(in); err != nil {
		return nil, runCommandResult{}, err
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, runCommandResult{}, err
	}
	opts := []sandpod.ExecOption{sandpod.WithMaxOutput(fetchStreamBytes), sandpod.WithTimeout(seconds(in.TimeoutSeconds, defaultTimeoutSeconds))}
	if in.Cwd != "" {
		opts = append(opts, sandpod.WithDir(in.Cwd))
	}
	if len(in.Env) > 0 {
		opts = append(opts, sandpod.WithEnv(in.Env))
	}
	var res *sandpod.Result
	if in.Command != "" {
		res, err = sb.Run(ctx, in.Command, opts...)
	} else {
		res, err = sb.RunArgv(ctx, in.Argv, opts...)
	}
	if err != nil {
		return nil, runCommandResult{}, sandboxError(sess, sb.Name(), err)
	}
	out := runCommandResult{Sandbox: sb.Name(), ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, DurationMS: res.Duration.Milliseconds()}
	out.Stdout, out.StdoutTruncated = clip(res.Stdout, MaxStreamBytes)
	out.Stderr, out.StderrTruncated = clip(res.Stderr, MaxStreamBytes)
	out.StdoutTruncated = out.StdoutTruncated || res.StdoutTruncated
	out.StderrTruncated = out.StderrTruncated || res.StderrTruncated
	return nil, out, nil
}

// seconds is n seconds, or def when n is 0 (the schema's default is
// applied by the SDK; a caller that bypasses it gets the same).
func seconds(n, def int) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

type runCodeArgs struct {
	Code           string `json:"code" jsonschema:"Python code to run, like a notebook cell: the value of the last expression is returned, and matplotlib figures come back as images."`
	ContextID      string `json:"context_id,omitempty" jsonschema:"A code context to run in (default: the sandbox's default context). Variables, imports and the working directory persist between calls in one context."`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"Interrupt the cell (KeyboardInterrupt) after this many seconds; the context keeps its state."`
	Sandbox        string `json:"sandbox,omitempty"`
}

type codeOutput struct {
	Formats       []string `json:"formats" jsonschema:"The MIME types of this result (text/plain, image/png, text/html, ...)."`
	Text          string   `json:"text,omitempty" jsonschema:"Its text/plain representation."`
	TextTruncated bool     `json:"text_truncated,omitempty"`
	Image         int      `json:"image,omitempty" jsonschema:"1-based index among the image contents of this result, when it is an image that came back."`
	Main          bool     `json:"main" jsonschema:"It is the value of the cell's last expression (not something displayed)."`
}

type codeError struct {
	Name      string `json:"name" jsonschema:"The exception's class, e.g. ZeroDivisionError; KeyboardInterrupt after a timeout; ContextDied when the interpreter died."`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

type runCodeResult struct {
	Sandbox         string       `json:"sandbox"`
	ContextID       string       `json:"context_id"`
	ExecutionCount  int64        `json:"execution_count"`
	Stdout          string       `json:"stdout"`
	Stderr          string       `json:"stderr"`
	StdoutTruncated bool         `json:"stdout_truncated"`
	StderrTruncated bool         `json:"stderr_truncated"`
	Results         []codeOutput `json:"results" jsonschema:"What the cell returned or displayed, in order."`
	ImagesLeftOut   int          `json:"images_left_out,omitempty" jsonschema:"Images not returned: over the count or size bound."`
	Error           *codeError   `json:"error,omitempty" jsonschema:"The exception the cell raised, with its traceback; absent when it ran through."`
	TimedOut        bool         `json:"timed_out"`
	ContextLost     bool         `json:"context_lost,omitempty" jsonschema:"The interpreter died: the context's state is gone."`
}

func (s *Server) addRunCode() {
	addTool(s, &sdk.Tool{
		Name: "run_code",
		Description: fmt.Sprintf("Run Python in a sandbox in a persistent interpreter, like a Jupyter cell: state persists between calls. "+
			"Returns stdout and stderr (each cut to its first and last %d KiB when longer), the value of the last expression, "+
			"images (matplotlib figures, PNG/JPEG: at most %d per call, each at most %d MiB) as image content, and an exception with its traceback. "+
			"An exception in the code is reported in `error`, not as a failed call.", MaxStreamBytes>>10, MaxImages, MaxImageBytes>>20),
		InputSchema: inputSchema[runCodeArgs](map[string]bound{
			"timeout_seconds": {min: 1, max: maxTimeoutSeconds, def: defaultTimeoutSeconds},
		}, nil),
		Annotations: destructive,
	}, s.runCodeTool)
}

func (s *Server) runCodeTool(ctx context.Context, req *sdk.CallToolRequest, in runCodeArgs) (*sdk.CallToolResult, runCodeResult, error) {
	if in.Code == "" {
		return nil, runCodeResult{}, errors.New("code: give the Python code to run")
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, runCodeResult{}, err
	}
	opts := []sandpod.CodeOption{sandpod.WithCodeTimeout(seconds(in.TimeoutSeconds, defaultTimeoutSeconds))}
	if in.ContextID != "" {
		opts = append(opts, sandpod.InCodeContext(in.ContextID))
	}
	ex, err := sb.RunCode(ctx, in.Code, opts...)
	if err != nil {
		return nil, runCodeResult{}, sandboxError(sess, sb.Name(), err)
	}
	out, images := codeResult(sb.Name(), ex)
	text, err := json.Marshal(out)
	if err != nil {
		return nil, runCodeResult{}, err
	}
	content := []sdk.Content{&sdk.TextContent{Text: string(text)}}
	for _, im := range images {
		content = append(content, im)
	}
	return &sdk.CallToolResult{Content: content}, out, nil
}

// codeResult is a cell's result within the bounds, and its images.
func codeResult(sandbox string, ex *sandpod.Execution) (runCodeResult, []*sdk.ImageContent) {
	out := runCodeResult{
		Sandbox: sandbox, ContextID: ex.ContextID, ExecutionCount: ex.ExecutionCount,
		TimedOut: ex.TimedOut, ContextLost: ex.ContextLost, Results: []codeOutput{},
	}
	out.Stdout, out.StdoutTruncated = clipString(ex.Stdout, MaxStreamBytes)
	out.Stderr, out.StderrTruncated = clipString(ex.Stderr, MaxStreamBytes)
	out.StdoutTruncated = out.StdoutTruncated || ex.StdoutTruncated
	out.StderrTruncated = out.StderrTruncated || ex.StderrTruncated
	if e := ex.Error; e != nil {
		tb, _ := clipString(e.Traceback, MaxStreamBytes)
		out.Error = &codeError{Name: e.Name, Value: e.Value, Traceback: tb}
	}
	var images []*sdk.ImageContent
	for _, r := range ex.Results {
		o := codeOutput{Formats: r.Formats(), Main: r.IsMainResult}
		o.Text, o.TextTruncated = clip(r.Data["text/plain"], MaxResultText)
		for _, mime := range []string{"image/png", "image/jpeg"} {
			data, ok := r.Data[mime]
			if !ok {
				continue
			}
			if len(images) == MaxImages || len(data) > MaxImageBytes {
				out.ImagesLeftOut++
			} else {
				images = append(images, &sdk.ImageContent{Data: data, MIMEType: mime})
				o.Image = len(images)
			}
			break
		}
		out.Results = append(out.Results, o)
	}
	return out, images
}
