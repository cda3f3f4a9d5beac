package integration

import (
	"bytes"
	"crypto/rand"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestFiles(t *testing.T) {
	srv := startServer(t, "")
	c := srv.Client()
	sb, _ := claim(t, c, "python")

	t.Run("write, read, stat, list, remove", func(t *testing.T) {
		big := make([]byte, 5<<20+123)
		_, _ = rand.Read(big)
		if err := writeFile(t, c, sb.Name, "data/big.bin", big); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(t, c, sb.Name, "/workspace/data/big.bin") // one path space: the same file
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("read back %d bytes (err %v), want %d identical", len(got), err, len(big))
		}
		st, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: sb.Name, Path: "data/big.bin"})
		if err != nil || st.GetFile().GetSize() != int64(len(big)) || st.GetFile().GetIsDir() {
			t.Fatalf("stat: %v %v", st, err)
		}
		r := sh(t, c, sb.Name, "md5sum data/big.bin | cut -c1-32")
		if len(r.stdout) != 33 {
			t.Fatalf("the file is not visible to commands: %q", r.stdout)
		}
		if _, err := c.MakeDir(ctx(t), &sandpodv1.MakeDirRequest{Sandbox: sb.Name, Path: "data/sub/deeper", Parents: true}); err != nil {
			t.Fatal(err)
		}
		ls, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name, Path: "data"})
		if err != nil || len(ls.GetFiles()) != 2 {
			t.Fatalf("list: %v %v", ls, err)
		}
		_, err = c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Sandbox: sb.Name, Path: "data"})
		wantCode(t, err, codes.FailedPrecondition, "not empty")
		wantWhy(t, err, errinfo.ReasonDirectoryNotEmpty)
		if _, err := c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Sandbox: sb.Name, Path: "data", Recursive: true}); err != nil {
			t.Fatal(err)
		}
		_, err = c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: sb.Name, Path: "data/big.bin"})
		wantCode(t, err, codes.NotFound, "data/big.bin")
	})
	t.Run("a write replaces the file atomically", func(t *testing.T) {
		if err := writeFile(t, c, sb.Name, "a.txt", []byte("one")); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(t, c, sb.Name, "a.txt", []byte("two")); err != nil {
			t.Fatal(err)
		}
		got, _ := readFile(t, c, sb.Name, "a.txt")
		ls, _ := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb.Name})
		if string(got) != "two" || len(ls.GetFiles()) != 1 {
			t.Fatalf("got %q and entries %v (temp files left behind?)", got, ls.GetFiles())
		}
	})
	t.Run("one path space: the files API sees what commands see", func(t *testing.T) {
		if err := writeFile(t, c, sb.Name, "/app/main.py", []byte("print('from /app')")); err != nil {
			t.Fatal(err)
		}
		if r := sh(t, c, sb.Name, "python3 /app/main.py && stat -c %U /app/main.py && pwd && echo $HOME"); r.stdout != "from /app\nuser\n/workspace\n/workspace\n" {
			t.Fatalf("a file written at /app: %+v", r)
		}
		sh(t, c, sb.Name, "echo made-by-shell > /tmp/shell.txt")
		if got, err := readFile(t, c, sb.Name, "/tmp/shell.txt"); err != nil || string(got) != "made-by-shell\n" {
			t.Fatalf("read /tmp/shell.txt: %q %v", got, err)
		}
	})
	t.Run("links resolve in the sandbox's own file system, never the host's", func(t *testing.T) {
		_, err := readFile(t, c, sb.Name, "../../../../etc/passwd")
		wantCode(t, err, codes.InvalidArgument, "..")
		sh(t, c, sb.Name, "ln -s /etc escape; ln -s /etc/passwd passwd-link")
		for _, p := range []string{"escape/passwd", "passwd-link"} {
			got, err := readFile(t, c, sb.Name, p)
			if err != nil || !strings.Contains(string(got), "user:x:1000:") {
				t.Fatalf("read %s: %v, %q; want the sandbox's own /etc/passwd", p, err, got)
			}
		}
		evil := "sandpod-evil-" + sb.Name
		if err := writeFile(t, c, sb.Name, "escape/"+evil, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/etc/" + evil); err == nil {
			os.Remove("/etc/" + evil)
			t.Fatalf("a write through a link to /etc reached the host's /etc")
		}
		if r := sh(t, c, sb.Name, "cat /etc/"+evil); r.stdout != "x" {
			t.Fatalf("the write went to the sandbox's /etc: %+v", r)
		}
		r, err := execIn(t, c, &sandpodv1.ExecStart{Sandbox: sb.Name, Shell: "pwd; grep -c '^user:' passwd", WorkingDir: "escape"}, "")
		if err != nil || r.stdout != "/etc\n1\n" { // the sandbox's own /etc
			t.Fatalf("working dir through a link: %+v %v", r, err)
		}
		_, err = readFile(t, c, sb.Name, "a\x00b")
		wantCode(t, err, codes.InvalidArgument, "NUL")
	})
}
