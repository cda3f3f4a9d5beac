package agent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestFileKind(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeSymlink:                    "a symbolic link",
		fs.ModeNamedPipe:                  "a fifo (named pipe)",
		fs.ModeSocket:                     "a Unix socket",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a block device",
		fs.ModeIrregular:                  "a special file",
	} {
		if got := fileKind(m); got != want {
			t.Errorf("fileKind(%v) = %q, want %q", m, got, want)
		}
	}
}

func TestReadSpan(t *testing.T) {
	type in struct{ size, offset, length int64 }
	for c, want := range map[in]int64{
		{10, 0, 0}:   10,
		{10, 4, 0}:   6,
		{10, 4, 3}:   3,
		{10, 4, 100}: 6,
		{10, 10, 0}:  0,
		{10, 20, 5}:  0,
		{0, 0, 0}:    pseudoFileMax, // /proc and /sys say 0
		{0, 5, 10}:   10,
	} {
		if got := readSpan(c.size, c.offset, c.length); got != want {
			t.Errorf("readSpan(%d, %d, %d) = %d, want %d", c.size, c.offset, c.length, got, want)
		}
	}
}

// Special files planted in the sandbox: each read or list returns at once
// with NOT_A_REGULAR_FILE, none leaves a thread blocked in open, and a
// file that grows while it is read ends at the size it had at open.
func TestFilesRefuseSpecialFiles(t *testing.T) {
	root := t.TempDir()
	srv, err := New(Config{Sandbox: "sb", Root: root, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	agent := sandpodv1.NewAgentServiceClient(serveInMemory(t, srv))
	ctx := metadata.AppendToOutgoingContext(context.Background(), agentconn.SecretMetadataKey, "s")
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"zero": "/dev/zero", "fifolink": "fifo"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) (int, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		st, err := agent.ReadFile(cctx, &sandpodv1.ReadFileRequest{Path: path})
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
	for _, p := range []string{"fifo", "fifolink", "zero", "/dev/null"} {
		n, err := read(p)
		if status.Code(err) != codes.FailedPrecondition || errinfo.Reason(err) != errinfo.ReasonNotARegularFile {
			t.Errorf("read %s: %d bytes, %v; want FAILED_PRECONDITION NOT_A_REGULAR_FILE", p, n, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = agent.ListFiles(cctx, &sandpodv1.ListFilesRequest{Path: "fifo"})
	if errinfo.Reason(err) != errinfo.ReasonNotARegularFile {
		t.Errorf("list a fifo: %v; want NOT_A_REGULAR_FILE", err)
	}
	_, err = agent.ListFiles(cctx, &sandpodv1.ListFilesRequest{Path: "zero"})
	if errinfo.Reason(err) != errinfo.ReasonNotARegularFile {
		t.Errorf("list a link to /dev/zero: %v; want NOT_A_REGULAR_FILE", err)
	}

	// A file that grows while it is read: the read ends at its size at
	// open, however fast it grows.
	grow := filepath.Join(root, "grow")
	if err := os.WriteFile(grow, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := agent.ReadFile(cctx, &sandpodv1.ReadFileRequest{Path: "grow"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(grow, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 5<<20)); err != nil {
		t.Fatal(err)
	}
	n := len(first.GetData())
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(m.GetData())
	}
	if n != 3<<20 {
		t.Errorf("read %d bytes of a file of 3 MiB at open that grew to 8 MiB, want 3 MiB", n)
	}
}
