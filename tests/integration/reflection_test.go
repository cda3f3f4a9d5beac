package integration

import (
	"slices"
	"strings"
	"testing"

	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Reflection serves the .proto files with their comments, so that
// `grpcurl describe sandpod.v1.SandboxService.Exec` documents the call.
func TestReflectionServesTheProtoComments(t *testing.T) {
	srv := startServer(t, "")
	rs, err := reflectionpb.NewServerReflectionClient(srv.Conn()).ServerReflectionInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rs.CloseSend() }()
	fileOf := func(symbol string) *descriptorpb.FileDescriptorProto {
		t.Helper()
		if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}}); err != nil {
			t.Fatal(err)
		}
		resp, err := rs.Recv()
		if err != nil {
			t.Fatal(err)
		}
		files := resp.GetFileDescriptorResponse().GetFileDescriptorProto()
		if len(files) == 0 {
			t.Fatalf("%s: no file in %v", symbol, resp)
		}
		var fd descriptorpb.FileDescriptorProto // the file containing the symbol comes first
		if err := proto.Unmarshal(files[0], &fd); err != nil {
			t.Fatal(err)
		}
		return &fd
	}
	leading := func(fd *descriptorpb.FileDescriptorProto, path ...int32) string {
		for _, loc := range fd.GetSourceCodeInfo().GetLocation() {
			if slices.Equal(loc.GetPath(), path) {
				return loc.GetLeadingComments()
			}
		}
		return ""
	}

	svc := fileOf("sandpod.v1.SandboxService")
	exec := slices.IndexFunc(svc.GetService()[0].GetMethod(), func(m *descriptorpb.MethodDescriptorProto) bool { return m.GetName() == "Exec" })
	// FileDescriptorProto.service = 6, ServiceDescriptorProto.method = 2.
	if got := leading(svc, 6, 0, 2, int32(exec)); !strings.Contains(got, "Runs a command in the sandbox.") {
		t.Errorf("Exec's comment over reflection: %q", got)
	}

	ex := fileOf("sandpod.v1.ExitStatus")
	msg := slices.IndexFunc(ex.GetMessageType(), func(m *descriptorpb.DescriptorProto) bool { return m.GetName() == "ExitStatus" })
	// FileDescriptorProto.message_type = 4, DescriptorProto.field = 2.
	if got := leading(ex, 4, int32(msg), 2, 0); !strings.Contains(got, "The exit code, or -1 when killed by a signal.") {
		t.Errorf("ExitStatus.exit_code's comment over reflection: %q", got)
	}

	// Files outside sandpod.v1 still resolve (from the generated code).
	if h := fileOf("grpc.health.v1.Health"); h.GetPackage() != "grpc.health.v1" {
		t.Errorf("health over reflection: %v", h.GetName())
	}
}
