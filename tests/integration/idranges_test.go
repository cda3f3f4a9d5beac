package integration

import (
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// Two servers with state directories of their own on one host: their
// sandboxes' host id ranges never overlap (a process's host uid, read from
// /proc on the host, and the owner of a file each writes in its
// workspace), a suspended sandbox keeps its range across a restart of its
// server, and the other server does not take it meanwhile.
func TestTwoServersNeverShareHostIDs(t *testing.T) {
	servers := []*testserver.Server{
		testserver.Start(t, testserver.Options{Config: storeConfig}),
		testserver.Start(t, testserver.Options{Config: storeConfig}),
	}
	const rangeSize = 65536
	owners := map[uint32]string{} // range index -> server/sandbox
	check := func(s *testserver.Server, which string) (sandbox string, rng uint32) {
		t.Helper()
		c := s.Client()
		sb, _ := claim(t, c, "python")
		uid := hostUID(t, markedProcess(t, c, sb.GetName(), uniqueMarker("sandpod-ids")))
		if f := workspaceFileOwner(t, c, s.StateDir(), sb.GetName(), "mine"); f != uid {
			t.Errorf("%s: workspace file owned by host uid %d, its process runs as %d", which, f, uid)
		}
		rng = uid / rangeSize
		if o, ok := owners[rng]; ok {
			t.Errorf("%s/%s has host uid %d, in the id range of %s", which, sb.GetName(), uid, o)
		}
		owners[rng] = which + "/" + sb.GetName()
		return sb.GetName(), rng
	}
	for i, which := range []string{"first server", "second server"} {
		check(servers[i], which)
		check(servers[i], which)
	}
	// The first server stops with a sandbox suspended (its files keep its
	// ids); the second makes another meanwhile; the first comes back and
	// resumes it, on its own range.
	a := servers[0]
	name, rng := check(a, "first server")
	sh(t, a.Client(), name, "true")
	if _, err := a.Client().SuspendSandbox(ctx(t), &sandpodv1.SuspendSandboxRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	a.Stop(t)
	check(servers[1], "second server")
	a.StartAgain(t)
	if _, err := a.Client().ResumeSandbox(ctx(t), &sandpodv1.ResumeSandboxRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	uid := hostUID(t, markedProcess(t, a.Client(), name, uniqueMarker("sandpod-ids")))
	if uid/rangeSize != rng {
		t.Errorf("resumed after its server's restart, %s runs as host uid %d, outside its range %d", name, uid, rng)
	}
}
