package e2b

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/sandpod/sandpod/bridge/e2b/envd/filesystem"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestFsEvents(t *testing.T) {
	in := []*sandpodv1.FileEvent{
		{Type: sandpodv1.FileEvent_TYPE_CREATE, Path: "w/a.txt"},
		{Type: sandpodv1.FileEvent_TYPE_WRITE, Path: "w/sub/b.txt"},
		{Type: sandpodv1.FileEvent_TYPE_RENAME, OldPath: "w/a.txt", Path: "w/c.txt"},
		{Type: sandpodv1.FileEvent_TYPE_REMOVE, Path: "w/c.txt"},
		{Type: sandpodv1.FileEvent_TYPE_OVERFLOW, Path: "w"},
	}
	want := []*filesystem.FilesystemEvent{
		{Name: "a.txt", Type: filesystem.EventType_EVENT_TYPE_CREATE},
		{Name: "sub/b.txt", Type: filesystem.EventType_EVENT_TYPE_WRITE},
		{Name: "a.txt", Type: filesystem.EventType_EVENT_TYPE_RENAME},
		{Name: "c.txt", Type: filesystem.EventType_EVENT_TYPE_CREATE},
		{Name: "c.txt", Type: filesystem.EventType_EVENT_TYPE_REMOVE},
	}
	if diff := cmp.Diff(want, fsEvents("/workspace/w", in), protocmp.Transform()); diff != "" {
		t.Errorf("fsEvents (-want +got):\n%s", diff)
	}
	abs := fsEvents("/tmp/x", []*sandpodv1.FileEvent{{Type: sandpodv1.FileEvent_TYPE_CREATE, Path: "/tmp/x/f"}})
	if len(abs) != 1 || abs[0].GetName() != "f" {
		t.Errorf("a watch outside the workspace: %v", abs)
	}
}
