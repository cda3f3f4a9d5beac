package bridge

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// registerReflection serves server reflection (v1 and v1alpha, as
// reflection.Register does) from the documented descriptors of sandpod.v1,
// so `grpcurl describe` prints the comments of the .proto files; other
// files (health, reflection itself) come from the global registry.
func registerReflection(g *grpc.Server) {
	opts := reflection.ServerOptions{Services: g}
	if files, err := sandpodv1.DocumentedFiles(); err == nil {
		opts.DescriptorResolver = documented{files}
	}
	// else: the embedded set is generated and tested; should it ever fail
	// to load, reflection still works, without comments.
	reflectionv1.RegisterServerReflectionServer(g, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(g, reflection.NewServer(opts))
}

// documented resolves from the documented files first, then from the
// descriptors the linked-in generated code registered.
type documented struct{ files *protoregistry.Files }

func (d documented) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := d.files.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (d documented) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if desc, err := d.files.FindDescriptorByName(name); err == nil {
		return desc, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
