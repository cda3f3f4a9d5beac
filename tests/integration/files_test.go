package integration

import (
	"bytes"
	"crypto/rand"
	"testing"

	"google.golang.org/grpc/codes"

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
		got, err := readFile(t, c, sb.Name, "/data/big.bin")
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
	t.Run("paths cannot leave the sandbox", func(t *testing.T) {
		_, err := readFile(t, c, sb.Name, "../../../../etc/passwd")
		wantCode(t, err, codes.InvalidArgument, "..")
		sh(t, c, sb.Name, "ln -s /etc escape; ln -s /etc/passwd passwd-link")
		_, err = readFile(t, c, sb.Name, "escape/passwd")
		wantCode(t, err, codes.PermissionDenied, "outside the sandbox")
		_, err = readFile(t, c, sb.Name, "passwd-link")
		wantCode(t, err, codes.PermissionDenied, "outside the sandbox")
		err = writeFile(t, c, sb.Name, "escape/evil", []byte("x"))
		wantCode(t, err, codes.PermissionDenied, "outside the sandbox")
		_, err = readFile(t, c, sb.Name, "a\x00b")
		wantCode(t, err, codes.InvalidArgument, "NUL")
	})
}
