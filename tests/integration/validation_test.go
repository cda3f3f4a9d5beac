package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// TestBadInput sends each kind of bad argument and checks the status code and
// that the message names the field, so a person can act on it.
func TestBadInput(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	long := strings.Repeat("a", 64)
	past := timestamppb.New(time.Now().Add(-time.Hour))

	type call func(ctx context.Context) error
	cases := map[string]struct {
		call     call
		code     codes.Code
		mentions string
	}{
		"create: no template": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{})
			return err
		}, codes.InvalidArgument, "template"},
		"create: unknown template": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "nope"})
			return err
		}, codes.NotFound, "nope"},
		"create: uppercase name": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Name: "Bad"})
			return err
		}, codes.InvalidArgument, "name"},
		"create: name too long": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Name: long})
			return err
		}, codes.InvalidArgument, "name"},
		"create: existing name": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Name: sb.Name})
			return err
		}, codes.AlreadyExists, sb.Name},
		"create: bad namespace": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Namespace: "a/b"})
			return err
		}, codes.InvalidArgument, "namespace"},
		"create: negative ttl": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Ttl: durationpb.New(-time.Second)})
			return err
		}, codes.InvalidArgument, "ttl"},
		"create: ttl beyond a year": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Ttl: durationpb.New(400 * 24 * time.Hour)})
			return err
		}, codes.InvalidArgument, "ttl"},
		"create: shutdown time in the past": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", ShutdownTime: past})
			return err
		}, codes.InvalidArgument, "shutdown_time"},
		"create: ttl and shutdown time": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Ttl: durationpb.New(time.Hour), ShutdownTime: timestamppb.New(time.Now().Add(time.Hour))})
			return err
		}, codes.InvalidArgument, "ttl"},
		"create: bad label key": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Labels: map[string]string{"bad key": "v"}})
			return err
		}, codes.InvalidArgument, "labels"},
		"create: bad label value": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Labels: map[string]string{"k": "spaces are bad"}})
			return err
		}, codes.InvalidArgument, "labels"},
		"create: bad env name": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Env: map[string]string{"1X": "v"}})
			return err
		}, codes.InvalidArgument, "env"},
		"create: reserved env name": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Env: map[string]string{"SANDPOD_AGENT_SECRET": "x"}})
			return err
		}, codes.InvalidArgument, "reserved"},
		"create: NUL in env value": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", Env: map[string]string{"A": "x\x00y"}})
			return err
		}, codes.InvalidArgument, "NUL"},
		"create: request id with spaces": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", RequestId: "a b"})
			return err
		}, codes.InvalidArgument, "request_id"},
		"create: request id too long": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", RequestId: strings.Repeat("r", 200)})
			return err
		}, codes.InvalidArgument, "request_id"},
		"create: unknown shutdown policy": {func(ctx context.Context) error {
			_, err := c.CreateSandbox(ctx, &sandpodv1.CreateSandboxRequest{Template: "python", ShutdownPolicy: 42})
			return err
		}, codes.InvalidArgument, "shutdown_policy"},
		"claim: unknown template": {func(ctx context.Context) error {
			_, err := c.ClaimSandbox(ctx, &sandpodv1.ClaimSandboxRequest{Template: "missing"})
			return err
		}, codes.NotFound, "missing"},
		"claim: bad template name": {func(ctx context.Context) error {
			_, err := c.ClaimSandbox(ctx, &sandpodv1.ClaimSandboxRequest{Template: "../x"})
			return err
		}, codes.InvalidArgument, "template"},
		"get: missing": {func(ctx context.Context) error {
			_, err := c.GetSandbox(ctx, &sandpodv1.GetSandboxRequest{Name: "ghost"})
			return err
		}, codes.NotFound, "ghost"},
		"get: empty name": {func(ctx context.Context) error {
			_, err := c.GetSandbox(ctx, &sandpodv1.GetSandboxRequest{})
			return err
		}, codes.InvalidArgument, "name"},
		"list: bad selector": {func(ctx context.Context) error {
			_, err := c.ListSandboxes(ctx, &sandpodv1.ListSandboxesRequest{LabelSelector: "a in (b"})
			return err
		}, codes.InvalidArgument, "label_selector"},
		"list: page size too big": {func(ctx context.Context) error {
			_, err := c.ListSandboxes(ctx, &sandpodv1.ListSandboxesRequest{PageSize: 5000})
			return err
		}, codes.InvalidArgument, "page_size"},
		"list: forged page token": {func(ctx context.Context) error {
			_, err := c.ListSandboxes(ctx, &sandpodv1.ListSandboxesRequest{PageToken: "not-a-token"})
			return err
		}, codes.InvalidArgument, "page_token"},
		"suspend: missing": {func(ctx context.Context) error {
			_, err := c.SuspendSandbox(ctx, &sandpodv1.SuspendSandboxRequest{Name: "ghost"})
			return err
		}, codes.NotFound, "ghost"},
		"resume: missing": {func(ctx context.Context) error {
			_, err := c.ResumeSandbox(ctx, &sandpodv1.ResumeSandboxRequest{Name: "ghost"})
			return err
		}, codes.NotFound, "ghost"},
		"extend: nothing given": {func(ctx context.Context) error {
			_, err := c.ExtendSandbox(ctx, &sandpodv1.ExtendSandboxRequest{Name: sb.Name})
			return err
		}, codes.InvalidArgument, "ttl"},
		"extend: past time": {func(ctx context.Context) error {
			_, err := c.ExtendSandbox(ctx, &sandpodv1.ExtendSandboxRequest{Name: sb.Name, ShutdownTime: past})
			return err
		}, codes.InvalidArgument, "shutdown_time"},
		"delete: missing": {func(ctx context.Context) error {
			_, err := c.DeleteSandbox(ctx, &sandpodv1.DeleteSandboxRequest{Name: "ghost"})
			return err
		}, codes.NotFound, "ghost"},
		"pool: missing": {func(ctx context.Context) error {
			_, err := c.GetWarmPool(ctx, &sandpodv1.GetWarmPoolRequest{Name: "ghost"})
			return err
		}, codes.NotFound, "ghost"},
		"pool: negative replicas": {func(ctx context.Context) error {
			_, err := c.ScaleWarmPool(ctx, &sandpodv1.ScaleWarmPoolRequest{Name: "python", Replicas: -1})
			return err
		}, codes.InvalidArgument, "replicas"},
		"pool: over the engine's limit": {func(ctx context.Context) error {
			_, err := c.ScaleWarmPool(ctx, &sandpodv1.ScaleWarmPoolRequest{Name: "python", Replicas: 5000})
			return err
		}, codes.ResourceExhausted, "limit"},
		"exec: no start message": {func(ctx context.Context) error {
			s, err := c.Exec(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: []byte("x")}})
			_, err = s.Recv()
			return err
		}, codes.InvalidArgument, "start"},
		"exec: missing sandbox": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: "ghost", Shell: "true"}, "")
			return err
		}, codes.NotFound, "ghost"},
		"exec: no command": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name}, "")
			return err
		}, codes.InvalidArgument, "argv"},
		"exec: argv and shell": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: []string{"true"}, Shell: "true"}, "")
			return err
		}, codes.InvalidArgument, "argv"},
		"exec: NUL in argv": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Argv: []string{"echo", "a\x00b"}}, "")
			return err
		}, codes.InvalidArgument, "argv"},
		"exec: working dir escapes": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true", WorkingDir: "../.."}, "")
			return err
		}, codes.InvalidArgument, "working_dir"},
		"exec: working dir missing": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true", WorkingDir: "nowhere"}, "")
			return err
		}, codes.NotFound, "nowhere"},
		"exec: negative timeout": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true", Timeout: durationpb.New(-time.Second)}, "")
			return err
		}, codes.InvalidArgument, "timeout"},
		"exec: output cap too big": {func(ctx context.Context) error {
			_, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "true", MaxOutputBytes: 1 << 40}, "")
			return err
		}, codes.InvalidArgument, "max_output_bytes"},
		"read: missing file": {func(ctx context.Context) error {
			_, err := readFile(t, c, sb.Name, "nothing-here")
			return err
		}, codes.NotFound, "nothing-here"},
		"read: a directory": {func(ctx context.Context) error {
			_, err := readFile(t, c, sb.Name, "/")
			return err
		}, codes.InvalidArgument, "directory"},
		"read: negative offset": {func(ctx context.Context) error {
			s, err := c.ReadFile(ctx, &sandpodv1.ReadFileRequest{Sandbox: sb.Name, Path: "x", Offset: -1})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}, codes.InvalidArgument, "offset"},
		"write: no header": {func(ctx context.Context) error {
			s, err := c.WriteFile(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: []byte("x")}})
			_, err = s.CloseAndRecv()
			return err
		}, codes.InvalidArgument, "header"},
		"write: to the root": {func(ctx context.Context) error {
			return writeFile(t, c, sb.Name, "/", []byte("x"))
		}, codes.InvalidArgument, "root"},
		"write: absolute path outside": {func(ctx context.Context) error {
			return writeFile(t, c, sb.Name, "/../etc/passwd", []byte("x"))
		}, codes.InvalidArgument, ".."},
		"mkdir: exists": {func(ctx context.Context) error {
			_, err := c.MakeDir(ctx, &sandpodv1.MakeDirRequest{Sandbox: sb.Name, Path: "d"})
			if err != nil {
				return err
			}
			_, err = c.MakeDir(ctx, &sandpodv1.MakeDirRequest{Sandbox: sb.Name, Path: "d"})
			return err
		}, codes.AlreadyExists, "d"},
		"mkdir: bad mode": {func(ctx context.Context) error {
			_, err := c.MakeDir(ctx, &sandpodv1.MakeDirRequest{Sandbox: sb.Name, Path: "m", Mode: 0o4777})
			return err
		}, codes.InvalidArgument, "mode"},
		"remove: the root": {func(ctx context.Context) error {
			_, err := c.RemoveFile(ctx, &sandpodv1.RemoveFileRequest{Sandbox: sb.Name, Path: "/", Recursive: true})
			return err
		}, codes.InvalidArgument, "root"},
		"stat: NUL byte": {func(ctx context.Context) error {
			_, err := c.StatFile(ctx, &sandpodv1.StatFileRequest{Sandbox: sb.Name, Path: "a\x00"})
			return err
		}, codes.InvalidArgument, "NUL"},
		"list files: not a directory": {func(ctx context.Context) error {
			if err := writeFile(t, c, sb.Name, "plain.txt", []byte("x")); err != nil {
				return err
			}
			_, err := c.ListFiles(ctx, &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: "plain.txt/x"})
			return err
		}, codes.InvalidArgument, "plain.txt"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.call(ctx(t))
			wantCode(t, err, tc.code, tc.mentions)
		})
	}
	// Nothing above crashed the server or created a stray sandbox.
	list, err := c.ListSandboxes(ctx(t), &sandpodv1.ListSandboxesRequest{})
	if err != nil || len(list.GetSandboxes()) != 1 {
		t.Fatalf("after the bad input: %v, %v; want only the claimed sandbox", list, err)
	}
}
