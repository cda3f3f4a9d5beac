package integration

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// agentThreads counts the threads of the sandbox's agent (the init's
// child), read on the host.
func agentThreads(t *testing.T, init string) int {
	t.Helper()
	kids, err := os.ReadFile(filepath.Join("/proc", init, "task", init, "children"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(kids))
	if len(f) == 0 {
		t.Fatal("the init has no child (the agent)")
	}
	st, err := os.ReadFile(filepath.Join("/proc", f[0], "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads in the agent's status")
	return 0
}

// The sandbox plants special files where the files API reads: a fifo
// (whose open blocks until a writer comes), links to it and to /dev/zero
// (endless), a Unix socket and, if it can make one, a device node. Each
// call returns FAILED_PRECONDITION NOT_A_REGULAR_FILE, not a hang to its
// deadline nor an endless stream, and no call leaves an agent thread
// behind.
func TestFilesRefuseSpecialFiles(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")
	plant := `mkfifo fifo && ln -s fifo fifolink && ln -s /dev/zero zero && mkdir d && mkfifo d/pipe &&
python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("sock")' &&
{ mknod node c 1 5 2>/dev/null || mknod node c 0 0 2>/dev/null || true; } && ls -l node 2>/dev/null; echo planted`
	r := sh(t, c, sb.Name, plant)
	if !strings.HasSuffix(r.stdout, "planted\n") {
		t.Fatalf("plant: %q %q", r.stdout, r.stderr)
	}
	paths := []string{"fifo", "fifolink", "zero", "d/pipe", "sock", "/dev/zero", "/dev/null"}
	if strings.HasPrefix(r.stdout, "c") {
		paths = append(paths, "node") // the sandbox could make a device node
	}
	init := sandboxInit(t, sandboxOnHost(t, srv, sb.Name))
	before := agentThreads(t, init)

	read := func(path string) (int, error) {
		cctx, cancel := context.WithTimeout(ctx(t), 2*time.Minute)
		defer cancel()
		st, err := c.ReadFile(cctx, &sandpodv1.ReadFileRequest{Sandbox: sb.Name, Path: path})
		if err != nil {
			return 0, err
		}
		n := 0
		for n < 64<<20 {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n += len(m.GetData())
		}
		return n, errors.New("streamed more than 64 MiB")
	}
	for round := 0; round < 2; round++ { // 14 and more calls: threads would pile up
		for _, p := range paths {
			n, err := read(p)
			if status.Code(err) != codes.FailedPrecondition || errinfo.Reason(err) != errinfo.ReasonNotARegularFile {
				t.Fatalf("read %s: %d bytes, %v; want FAILED_PRECONDITION NOT_A_REGULAR_FILE", p, n, err)
			}
		}
	}
	for _, p := range []string{"fifo", "zero"} {
		_, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: p})
		wantWhy(t, err, errinfo.ReasonNotARegularFile)
	}
	_, err := c.ReadFile(ctx(t), &sandpodv1.ReadFileRequest{Sandbox: sb.Name, Path: "fifo"})
	if err == nil { // a stream's error comes with its first message
		st, _ := c.ReadFile(ctx(t), &sandpodv1.ReadFileRequest{Sandbox: sb.Name, Path: "fifo"})
		_, err = st.Recv()
	}
	wantCode(t, err, codes.FailedPrecondition, "is a fifo (named pipe)")
	// Listing the directory that holds them still works.
	ls, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: "d"})
	if err != nil || len(ls.GetFiles()) != 1 {
		t.Fatalf("list d: %v %v", ls, err)
	}
	if after := agentThreads(t, init); after > before+3 {
		t.Errorf("the agent had %d threads before %d refused calls and %d after: calls left threads blocked", before, 2*len(paths)+3, after)
	}
}
