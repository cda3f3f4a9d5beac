package conformance_test

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// call is one RPC of a case; streams are read to their first error.
type call func(ctx context.Context, api pb.SandboxServiceClient, ns string) error

func execCall(start *pb.ExecStart) call {
	return func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
		if start.Namespace == "" {
			start.Namespace = ns
		}
		s, err := api.Exec(ctx)
		if err != nil {
			return err
		}
		if err := s.Send(&pb.ExecRequest{Msg: &pb.ExecRequest_Start{Start: start}}); err != nil && err != io.EOF {
			return err
		}
		_ = s.CloseSend()
		for {
			if _, err := s.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
}

func readCall(sandbox, path string) call {
	return func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
		s, err := api.ReadFile(ctx, &pb.ReadFileRequest{Sandbox: sandbox, Namespace: ns, Path: path})
		if err != nil {
			return err
		}
		for {
			if _, err := s.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
}

func writeCall(sandbox, path string) call {
	return func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
		s, err := api.WriteFile(ctx)
		if err != nil {
			return err
		}
		_ = s.Send(&pb.WriteFileRequest{Msg: &pb.WriteFileRequest_Header{Header: &pb.WriteFileHeader{Sandbox: sandbox, Namespace: ns, Path: path}}})
		_, err = s.CloseAndRecv()
		return err
	}
}

type codeCase struct {
	what   string
	call   call
	code   codes.Code
	reason errinfo.Why
}

func (c codeCase) check(t *testing.T, b *backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	want(t, c.what, c.call(ctx, b.api, b.ns), c.code, c.reason)
}

// sandboxCalls are every call that names one sandbox, for the answers all
// of them share.
func sandboxCalls(name string) map[string]call {
	return map[string]call{
		"GetSandbox": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: name, Namespace: ns})
			return err
		},
		"SuspendSandbox": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.SuspendSandbox(ctx, &pb.SuspendSandboxRequest{Name: name, Namespace: ns})
			return err
		},
		"ResumeSandbox": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ResumeSandbox(ctx, &pb.ResumeSandboxRequest{Name: name, Namespace: ns})
			return err
		},
		"PauseSandbox": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.PauseSandbox(ctx, &pb.PauseSandboxRequest{Name: name, Namespace: ns})
			return err
		},
		"ExtendSandbox": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ExtendSandbox(ctx, &pb.ExtendSandboxRequest{Name: name, Namespace: ns, Ttl: durationpb.New(time.Hour)})
			return err
		},
		"Exec":      execCall(&pb.ExecStart{Sandbox: name, Argv: []string{"true"}}),
		"ReadFile":  readCall(name, "f"),
		"WriteFile": writeCall(name, "f"),
		"ListFiles": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ListFiles(ctx, &pb.ListFilesRequest{Sandbox: name, Namespace: ns, Path: "."})
			return err
		},
		"StatFile": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.StatFile(ctx, &pb.StatFileRequest{Sandbox: name, Namespace: ns, Path: "f"})
			return err
		},
		"RemoveFile": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.RemoveFile(ctx, &pb.RemoveFileRequest{Sandbox: name, Namespace: ns, Path: "f"})
			return err
		},
		"MakeDir": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.MakeDir(ctx, &pb.MakeDirRequest{Sandbox: name, Namespace: ns, Path: "d"})
			return err
		},
		"DeleteSandbox": func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: name, Namespace: ns})
			return err
		},
	}
}

// testCodes: the answers that need no sandbox in a given state.
func testCodes(t *testing.T, b *backend) {
	ctx := callCtx(t)
	for rpc, c := range sandboxCalls("never-made") {
		codeCase{rpc + " of a sandbox that does not exist", c, codes.NotFound, errinfo.ReasonSandboxNotFound}.check(t, b)
	}
	for rpc, c := range sandboxCalls("") {
		if rpc == "Exec" || rpc == "ReadFile" || rpc == "WriteFile" || rpc == "ListFiles" || rpc == "StatFile" || rpc == "RemoveFile" || rpc == "MakeDir" {
			continue // the sandbox field of a file call: see below
		}
		codeCase{rpc + " without a name", c, codes.InvalidArgument, errinfo.ReasonInvalidName}.check(t, b)
	}
	for _, c := range []codeCase{
		{"CreateSandbox without a template", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Namespace: ns})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidName},
		{"CreateSandbox of an unknown template", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Namespace: ns, Template: "nope"})
			return err
		}, codes.NotFound, errinfo.ReasonTemplateNotFound},
		{"ClaimSandbox of an unknown template", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Namespace: ns, Template: "nope"})
			return err
		}, codes.NotFound, errinfo.ReasonTemplateNotFound},
		{"ClaimSandbox with a reserved label", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Namespace: ns, Template: tmplWarm, Labels: map[string]string{"sandpod.dev/pool": "warm"}})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidLabels},
		{"ClaimSandbox with a negative ttl", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Namespace: ns, Template: tmplWarm, Ttl: durationpb.New(-time.Second)})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidLifetime},
		{"CreateSandbox with a bad request id", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Namespace: ns, Template: tmplPlain, RequestId: "has space"})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidRequestID},
		{"ListSandboxes with a bad selector", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns, LabelSelector: "a in (b"})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidSelector},
		{"ListSandboxes with a page too large", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns, PageSize: 5000})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidPage},
		{"ListSandboxes with a foreign page token", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: ns, PageToken: "garbage"})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidPage},
		{"GetWarmPool of an unknown pool", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.GetWarmPool(ctx, &pb.GetWarmPoolRequest{Namespace: ns, Name: "nope"})
			return err
		}, codes.NotFound, errinfo.ReasonPoolNotFound},
		{"ScaleWarmPool of an unknown pool", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ScaleWarmPool(ctx, &pb.ScaleWarmPoolRequest{Namespace: ns, Name: "nope", Replicas: 1})
			return err
		}, codes.NotFound, errinfo.ReasonPoolNotFound},
		{"ScaleWarmPool to a negative size", func(ctx context.Context, api pb.SandboxServiceClient, ns string) error {
			_, err := api.ScaleWarmPool(ctx, &pb.ScaleWarmPoolRequest{Namespace: ns, Name: "warm", Replicas: -1})
			return err
		}, codes.InvalidArgument, errinfo.ReasonInvalidValue},
		{"Exec with argv and shell", execCall(&pb.ExecStart{Sandbox: "never-made", Argv: []string{"true"}, Shell: "true"}),
			codes.InvalidArgument, errinfo.ReasonInvalidCommand},
		{"ReadFile of a path with ..", readCall("never-made", "../etc/passwd"), codes.InvalidArgument, errinfo.ReasonInvalidPath},
		{"ReadFile without a sandbox", readCall("", "f"), codes.InvalidArgument, errinfo.ReasonInvalidName},
	} {
		c.check(t, b)
	}

	sb := b.create(t, ctx, &pb.CreateSandboxRequest{Name: "taken-" + b.kind})
	_, err := b.api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Namespace: b.ns, Template: tmplPlain, Name: sb.GetName()})
	want(t, "CreateSandbox of a taken name", err, codes.AlreadyExists, errinfo.ReasonSandboxExists)
	b.delete(t, ctx, sb.GetName())
	for rpc, c := range sandboxCalls(sb.GetName()) {
		codeCase{rpc + " right after the sandbox's delete", c, codes.NotFound, errinfo.ReasonSandboxNotFound}.check(t, b)
	}
}

// testCodesUnclaimedMember: an unclaimed pool member is visible and may be
// deleted, and every other call on it is refused.
func testCodesUnclaimedMember(t *testing.T, b *backend) {
	ctx := callCtx(t)
	name := b.member(t, ctx)
	for rpc, c := range sandboxCalls(name) {
		switch rpc {
		case "GetSandbox":
			if err := c(ctx, b.api, b.ns); err != nil {
				t.Errorf("GetSandbox of an unclaimed member: %v", err)
			}
		case "DeleteSandbox":
		default:
			codeCase{rpc + " of an unclaimed member", c, codes.FailedPrecondition, errinfo.ReasonUnclaimedPoolMember}.check(t, b)
		}
	}
}

// testCodesSuspended: calls on a suspended sandbox of a template without
// auto-resume.
func testCodesSuspended(t *testing.T, b *backend) {
	ctx := callCtx(t)
	sb := b.create(t, ctx, &pb.CreateSandboxRequest{})
	if _, err := b.api.SuspendSandbox(ctx, &pb.SuspendSandboxRequest{Name: sb.GetName(), Namespace: b.ns}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the sandbox to be suspended", func() (bool, string) {
		got, err := b.api.GetSandbox(ctx, &pb.GetSandboxRequest{Name: sb.GetName(), Namespace: b.ns})
		return err == nil && got.GetSandbox().GetPhase() == pb.Phase_PHASE_SUSPENDED, got.GetSandbox().GetPhase().String()
	})
	if _, err := b.api.SuspendSandbox(ctx, &pb.SuspendSandboxRequest{Name: sb.GetName(), Namespace: b.ns}); err != nil {
		t.Errorf("suspend of a suspended sandbox: %v", err)
	}
	for rpc, c := range sandboxCalls(sb.GetName()) {
		switch rpc {
		case "GetSandbox", "DeleteSandbox", "SuspendSandbox", "ResumeSandbox", "ExtendSandbox":
			continue
		}
		codeCase{rpc + " of a suspended sandbox", c, codes.FailedPrecondition, errinfo.ReasonSandboxSuspended}.check(t, b)
	}
	b.delete(t, ctx, sb.GetName())
}

// testCodesAuth: a call without the token, and one in a namespace the token
// may not use.
func testCodesAuth(t *testing.T, b *backend) {
	ctx := callCtx(t)
	_, err := pb.NewSandboxServiceClient(b.anon).ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: b.ns})
	want(t, "a call without a token", err, codes.Unauthenticated, errinfo.ReasonInvalidToken)
	_, err = b.api.ListSandboxes(ctx, &pb.ListSandboxesRequest{Namespace: "elsewhere"})
	want(t, "a call in a namespace the token may not use", err, codes.PermissionDenied, errinfo.ReasonNamespaceForbidden)
}

// testSnapshots: both backends list snapshots and answer NOT_FOUND for an
// unknown one. A snapshot holds what the backend can copy: the local
// engine's workspace always exists, while on Kubernetes a snapshot holds
// the sandbox's volumes, so a sandbox without any answers
// FAILED_PRECONDITION (SANDBOX_HAS_NO_VOLUMES): the one documented
// difference of this suite.
func testSnapshots(t *testing.T, b *backend) {
	ctx := callCtx(t)
	sb := b.create(t, ctx, &pb.CreateSandboxRequest{})
	defer b.delete(t, ctx, sb.GetName())
	_, err := b.api.ListSnapshots(ctx, &pb.ListSnapshotsRequest{Namespace: b.ns})
	_, serr := b.api.SnapshotSandbox(ctx, &pb.SnapshotSandboxRequest{Sandbox: sb.GetName(), Namespace: b.ns, Name: "snap-" + b.kind})
	_, gerr := b.api.GetSnapshot(ctx, &pb.GetSnapshotRequest{Name: "nope", Namespace: b.ns})
	want(t, "GetSnapshot of an unknown snapshot", gerr, codes.NotFound, errinfo.ReasonSnapshotNotFound)
	if err != nil {
		t.Errorf("ListSnapshots: %v", err)
	}
	if b.kube() {
		want(t, "SnapshotSandbox of a sandbox without volumes on Kubernetes", serr, codes.FailedPrecondition, errinfo.ReasonSandboxHasNoVolumes)
		return
	}
	if serr != nil {
		t.Errorf("SnapshotSandbox: %v", serr)
	}
	_, _ = b.api.DeleteSnapshot(ctx, &pb.DeleteSnapshotRequest{Name: "snap-" + b.kind, Namespace: b.ns})
}
