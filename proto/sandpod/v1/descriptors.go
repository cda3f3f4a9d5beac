package sandpodv1

import (
	_ "embed"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// descriptorSet is every .proto file of this package, and what they import,
// as protoc compiled them with their comments (a FileDescriptorSet with
// source info, written by hack/generate-proto.sh and drift-checked with the
// stubs). The descriptors the generated code registers have no comments.
//
//go:embed descriptors.binpb
var descriptorSet []byte

// DocumentedFiles returns the files of sandpod.v1, and their imports, with
// their comments: what server reflection serves, so that `grpcurl describe`
// shows the documentation.
func DocumentedFiles() (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptorSet, &set); err != nil {
		return nil, err
	}
	return protodesc.NewFiles(&set)
}
