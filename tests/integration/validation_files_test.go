package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The exec and file cases of TestBadInput (validation_test.go).

// rawExec sends msgs on a new exec stream, half-closes it and reads until
// the exit status (nil) or an error.
func rawExec(t *testing.T, c sandpodv1.SandboxServiceClient, msgs ...*sandpodv1.ExecRequest) error {
	t.Helper()
	s, err := c.Exec(ctx(t))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.Send(m); err != nil {
			break // the server ended the call; Recv has its status
		}
	}
	_ = s.CloseSend()
	for {
		msg, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("exec stream ended without an exit status")
			}
			return err
		}
		if msg.GetExit() != nil {
			return nil
		}
	}
}

func startMsg(st *sandpodv1.ExecStart) *sandpodv1.ExecRequest {
	return &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: st}}
}

func stdinMsg(b []byte) *sandpodv1.ExecRequest {
	return &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Stdin{Stdin: b}}
}

// rawWrite sends msgs on a new write stream and returns the call's error.
func rawWrite(t *testing.T, c sandpodv1.SandboxServiceClient, msgs ...*sandpodv1.WriteFileRequest) error {
	t.Helper()
	s, err := c.WriteFile(ctx(t))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.Send(m); err != nil {
			break
		}
	}
	_, err = s.CloseAndRecv()
	return err
}

func header(h *sandpodv1.WriteFileHeader) *sandpodv1.WriteFileRequest {
	return &sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Header{Header: h}}
}

func data(b []byte) *sandpodv1.WriteFileRequest {
	return &sandpodv1.WriteFileRequest{Msg: &sandpodv1.WriteFileRequest_Data{Data: b}}
}

// stdinFlood starts a command that reads 1 KiB of its input and exits, and
// sends it 64 MiB more: the call must end with the command, not hang on
// the stdin nobody reads.
func stdinFlood(c sandpodv1.SandboxServiceClient, sb string) func(*testing.T) error {
	return func(t *testing.T) error {
		s, err := c.Exec(ctx(t))
		if err != nil {
			return err
		}
		if err := s.Send(startMsg(&sandpodv1.ExecStart{Sandbox: sb, Shell: "head -c 1024 >/dev/null; echo done"})); err != nil {
			return err
		}
		go func() {
			chunk := bytes.Repeat([]byte("y"), 1<<20)
			for range 64 {
				if s.Send(stdinMsg(chunk)) != nil {
					return
				}
			}
			_ = s.CloseSend()
		}()
		began := time.Now()
		var out string
		for {
			msg, err := s.Recv()
			if err != nil {
				return err
			}
			out += string(msg.GetStdout())
			if x := msg.GetExit(); x != nil {
				if x.GetExitCode() != 0 || out != "done\n" {
					t.Fatalf("flooded command: exit %v, stdout %q", x, out)
				}
				t.Logf("flooded exec ended after %v", time.Since(began))
				return nil
			}
		}
	}
}

func execCases(e *badInputEnv) map[string]badCase {
	c, sb := e.c, e.sb
	run := func(st *sandpodv1.ExecStart) func(*testing.T) error {
		if st.Sandbox == "" && st.Namespace == "" {
			st.Sandbox = sb
		}
		return func(t *testing.T) error { return rawExec(t, c, startMsg(st)) }
	}
	msgs := func(m ...*sandpodv1.ExecRequest) func(*testing.T) error {
		return func(t *testing.T) error { return rawExec(t, c, m...) }
	}
	sleep := &sandpodv1.ExecStart{Sandbox: sb, Shell: "sleep 30"}
	big := strings.Repeat("x", 200<<10)
	manyArgs := []string{"true"}
	for range 40 {
		manyArgs = append(manyArgs, strings.Repeat("a", 100<<10))
	}
	ia := codes.InvalidArgument
	return map[string]badCase{
		// The protocol.
		"exec: no start message":         {msgs(stdinMsg([]byte("x"))), ia, "start"},
		"exec: close_stdin first":        {msgs(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_CloseStdin{CloseStdin: true}}), ia, "start"},
		"exec: signal first":             {msgs(&sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Signal{Signal: 9}}), ia, "start"},
		"exec: no message at all":        {msgs(), ia, "start"},
		"exec: a second start":           {msgs(startMsg(sleep), startMsg(sleep)), ia, "start"},
		"exec: stdin message over 8 MiB": {msgs(startMsg(&sandpodv1.ExecStart{Sandbox: sb, Shell: "cat >/dev/null"}), stdinMsg(make([]byte, 9<<20))), codes.ResourceExhausted, "larger than max"},
		"exec: stdin flood":              {stdinFlood(c, sb), codes.OK, ""},
		// The sandbox.
		"exec: missing sandbox":    {run(&sandpodv1.ExecStart{Sandbox: "ghost", Shell: "true"}), codes.NotFound, "ghost"},
		"exec: empty sandbox name": {run(&sandpodv1.ExecStart{Namespace: "default", Shell: "true"}), ia, "sandbox"},
		"exec: bad sandbox name":   {run(&sandpodv1.ExecStart{Sandbox: "Bad_Name", Shell: "true"}), ia, "sandbox"},
		"exec: bad namespace":      {run(&sandpodv1.ExecStart{Sandbox: sb, Namespace: "a/b", Shell: "true"}), ia, "namespace"},
		"exec: another namespace":  {run(&sandpodv1.ExecStart{Sandbox: sb, Namespace: "team-a", Shell: "true"}), codes.NotFound, "team-a"},
		// The command.
		"exec: no command":                        {run(&sandpodv1.ExecStart{}), ia, "argv"},
		"exec: empty argv[0]":                     {run(&sandpodv1.ExecStart{Argv: []string{""}}), ia, "argv"},
		"exec: empty argv[0] with args":           {run(&sandpodv1.ExecStart{Argv: []string{"", "x"}}), ia, "argv"},
		"exec: argv and shell":                    {run(&sandpodv1.ExecStart{Argv: []string{"true"}, Shell: "true"}), ia, "argv"},
		"exec: NUL in argv":                       {run(&sandpodv1.ExecStart{Argv: []string{"echo", "a\x00b"}}), ia, "argv"},
		"exec: NUL in shell":                      {run(&sandpodv1.ExecStart{Shell: "echo a\x00b"}), ia, "shell"},
		"exec: argument over 128 KiB":             {run(&sandpodv1.ExecStart{Argv: []string{"echo", big}}), ia, "argv"},
		"exec: shell over 128 KiB":                {run(&sandpodv1.ExecStart{Shell: "echo " + big}), ia, "shell"},
		"exec: arguments over the kernel's limit": {run(&sandpodv1.ExecStart{Argv: manyArgs}), ia, "argv"},
		// Where and how.
		"exec: working dir escapes":            {run(&sandpodv1.ExecStart{Shell: "true", WorkingDir: "../.."}), ia, "working_dir"},
		"exec: working dir missing":            {run(&sandpodv1.ExecStart{Shell: "true", WorkingDir: "nowhere"}), codes.FailedPrecondition, "nowhere"},
		"exec: working dir is a file":          {run(&sandpodv1.ExecStart{Shell: "true", WorkingDir: "plain.txt"}), ia, "plain.txt"},
		"exec: NUL in working dir":             {run(&sandpodv1.ExecStart{Shell: "true", WorkingDir: "a\x00"}), ia, "working_dir"},
		"exec: working dir too long":           {run(&sandpodv1.ExecStart{Shell: "true", WorkingDir: strings.Repeat("d/", 2100)}), ia, "working_dir"},
		"exec: working dir name too long":      {run(&sandpodv1.ExecStart{Shell: "true", WorkingDir: strings.Repeat("d", 300)}), ia, "working_dir"},
		"exec: negative timeout":               {run(&sandpodv1.ExecStart{Shell: "true", Timeout: durationpb.New(-time.Second)}), ia, "timeout"},
		"exec: timeout with bad nanos":         {run(&sandpodv1.ExecStart{Shell: "true", Timeout: &durationpb.Duration{Seconds: 1, Nanos: -1}}), ia, "timeout"},
		"exec: timeout beyond the proto range": {run(&sandpodv1.ExecStart{Shell: "true", Timeout: &durationpb.Duration{Seconds: 1 << 62}}), ia, "timeout"},
		"exec: output cap too big":             {run(&sandpodv1.ExecStart{Shell: "true", MaxOutputBytes: 1 << 40}), ia, "max_output_bytes"},
		"exec: negative output cap":            {run(&sandpodv1.ExecStart{Shell: "true", MaxOutputBytes: -1}), ia, "max_output_bytes"},
		"exec: bad env name":                   {run(&sandpodv1.ExecStart{Shell: "true", Env: map[string]string{"9A": "v"}}), ia, "env"},
		"exec: reserved env name":              {run(&sandpodv1.ExecStart{Shell: "true", Env: map[string]string{"SANDPOD_ROOT": "/"}}), ia, "env"},
		"exec: NUL in env value":               {run(&sandpodv1.ExecStart{Shell: "true", Env: map[string]string{"A": "\x00"}}), ia, "env"},
		"exec: too many env variables":         {run(&sandpodv1.ExecStart{Shell: "true", Env: manyEnv(300, 1)}), ia, "env"},
	}
}

func fileCases(e *badInputEnv) map[string]badCase {
	c, sb := e.c, e.sb
	read := func(r *sandpodv1.ReadFileRequest) func(*testing.T) error {
		if r.Sandbox == "" && r.Namespace == "" {
			r.Sandbox = sb
		}
		return func(t *testing.T) error {
			s, err := c.ReadFile(ctx(t), r)
			if err != nil {
				return err
			}
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		}
	}
	readPath := func(p string) func(*testing.T) error { return read(&sandpodv1.ReadFileRequest{Path: p}) }
	write := func(h *sandpodv1.WriteFileHeader, chunks ...[]byte) func(*testing.T) error {
		if h.Sandbox == "" && h.Namespace == "" {
			h.Sandbox = sb
		}
		return func(t *testing.T) error {
			msgs := []*sandpodv1.WriteFileRequest{header(h)}
			for _, b := range chunks {
				msgs = append(msgs, data(b))
			}
			return rawWrite(t, c, msgs...)
		}
	}
	writePath := func(p string) func(*testing.T) error { return write(&sandpodv1.WriteFileHeader{Path: p}, []byte("x")) }
	list := func(p string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb, Path: p})
			return err
		}
	}
	listPage := func(size int32, token string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb, Path: "full", PageSize: size, PageToken: token})
			return err
		}
	}
	stat := func(p string) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: sb, Path: p})
			return err
		}
	}
	remove := func(p string, recursive bool) func(*testing.T) error {
		return func(t *testing.T) error {
			_, err := c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Sandbox: sb, Path: p, Recursive: recursive})
			return err
		}
	}
	mkdir := func(r *sandpodv1.MakeDirRequest) func(*testing.T) error {
		if r.Sandbox == "" && r.Namespace == "" {
			r.Sandbox = sb
		}
		return func(t *testing.T) error {
			_, err := c.MakeDir(ctx(t), r)
			return err
		}
	}
	tooLong := strings.Repeat("p/", 2100)
	longName := strings.Repeat("n", 300)
	ia, nf, pd := codes.InvalidArgument, codes.NotFound, codes.PermissionDenied
	return map[string]badCase{
		// ReadFile.
		"read: missing file":                {readPath("nothing-here"), nf, "nothing-here"},
		"read: a directory":                 {readPath("/"), ia, "directory"},
		"read: dot-dot":                     {readPath("../../etc/passwd"), ia, "path"},
		"read: absolute path outside":       {readPath("/../etc/passwd"), ia, "path"},
		"read: NUL byte":                    {readPath("plain.txt\x00"), ia, "path"},
		"read: path too long":               {readPath(tooLong), ia, "path"},
		"read: file name too long":          {readPath(longName), ia, "path"},
		"read: link loop":                   {readPath("loop"), ia, "loop"},
		"read: dangling link":               {readPath("dangling"), nf, "dangling"},
		"write: into a read-only host tree": {writePath("/usr/bin/evil"), pd, "read-only"},
		"read: negative offset":             {read(&sandpodv1.ReadFileRequest{Path: "plain.txt", Offset: -1}), ia, "offset"},
		"read: negative length":             {read(&sandpodv1.ReadFileRequest{Path: "plain.txt", Length: -1}), ia, "length"},
		"read: offset far past the end":     {read(&sandpodv1.ReadFileRequest{Path: "plain.txt", Offset: 1<<63 - 1}), codes.OK, ""},
		"read: empty sandbox name":          {read(&sandpodv1.ReadFileRequest{Namespace: "default", Path: "plain.txt"}), ia, "sandbox"},
		"read: missing sandbox":             {read(&sandpodv1.ReadFileRequest{Sandbox: "ghost", Path: "plain.txt"}), nf, "ghost"},
		"read: bad namespace":               {read(&sandpodv1.ReadFileRequest{Sandbox: sb, Namespace: "a b", Path: "plain.txt"}), ia, "namespace"},

		// WriteFile.
		"write: no header":         {func(t *testing.T) error { return rawWrite(t, c, data([]byte("x"))) }, ia, "header"},
		"write: no message at all": {func(t *testing.T) error { return rawWrite(t, c) }, ia, "header"},
		"write: a second header": {func(t *testing.T) error {
			return rawWrite(t, c, header(&sandpodv1.WriteFileHeader{Sandbox: sb, Path: "h2"}), header(&sandpodv1.WriteFileHeader{Sandbox: sb, Path: "h3"}))
		}, ia, "header"},
		"write: to the root":           {writePath("/"), ia, "root"},
		"write: onto a directory":      {writePath("full"), ia, "full"},
		"write: dot-dot":               {writePath("a/../../x"), ia, "path"},
		"write: absolute path outside": {writePath("/../etc/passwd"), ia, ".."},
		"write: NUL byte":              {writePath("x\x00"), ia, "path"},
		"write: path too long":         {writePath(tooLong), ia, "path"},
		"write: file name too long":    {writePath(longName), ia, "path"},
		// A name near NAME_MAX is fine: its hidden temporary name must fit too.
		"write: file name of 250 bytes":  {writePath(strings.Repeat("w", 250)), codes.OK, ""},
		"write: missing parent":          {write(&sandpodv1.WriteFileHeader{Path: "no/such/dir/f"}, []byte("x")), nf, "no/such/dir/f"},
		"write: parent is a file":        {write(&sandpodv1.WriteFileHeader{Path: "plain.txt/f", MakeParents: true}, []byte("x")), ia, "plain.txt/f"},
		"write: mode beyond 0777":        {write(&sandpodv1.WriteFileHeader{Path: "m.txt", Mode: 0o4755}), ia, "mode"},
		"write: data message over 8 MiB": {write(&sandpodv1.WriteFileHeader{Path: "huge.bin"}, make([]byte, 9<<20)), codes.ResourceExhausted, "larger than max"},
		// No size limit on a file itself: 24 MiB in chunks is written.
		"write: 24 MiB in chunks":   {write(&sandpodv1.WriteFileHeader{Path: "big.bin"}, chunks(24, 1<<20)...), codes.OK, ""},
		"write: empty sandbox name": {write(&sandpodv1.WriteFileHeader{Namespace: "default", Path: "x"}), ia, "sandbox"},
		"write: missing sandbox":    {write(&sandpodv1.WriteFileHeader{Sandbox: "ghost", Path: "x"}), nf, "ghost"},
		"write: bad namespace":      {write(&sandpodv1.WriteFileHeader{Sandbox: sb, Namespace: "NS", Path: "x"}), ia, "namespace"},

		// ListFiles.
		"list files: not a directory":      {list("plain.txt/x"), ia, "plain.txt"},
		"list files: a file":               {list("plain.txt"), ia, "plain.txt"},
		"list files: missing":              {list("nowhere"), nf, "nowhere"},
		"list files: dot-dot":              {list(".."), ia, "path"},
		"list files: NUL byte":             {list("\x00"), ia, "path"},
		"list files: link loop":            {list("loop"), ia, "loop"},
		"list files: negative page size":   {listPage(-1, ""), ia, "page_size"},
		"list files: page size over 10000": {listPage(10001, ""), ia, "page_size"},
		"list files: garbage page token":   {listPage(0, "%%%"), ia, "page_token"},
		"list files: token of another directory": {func(t *testing.T) error {
			first, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb, Path: "/", PageSize: 1})
			if err != nil || first.GetNextPageToken() == "" {
				t.Fatalf("a first page of one entry: %v, %v", first, err)
			}
			_, err = c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Sandbox: sb, Path: "full", PageToken: first.GetNextPageToken()})
			return err
		}, ia, "page_token"},
		"list files: empty sandbox name": {func(t *testing.T) error {
			_, err := c.ListFiles(ctx(t), &sandpodv1.ListFilesRequest{Path: "/"})
			return err
		}, ia, "sandbox"},

		// StatFile.
		"stat: NUL byte":           {stat("a\x00"), ia, "NUL"},
		"stat: dot-dot":            {stat("full/../../x"), ia, "path"},
		"stat: path too long":      {stat(tooLong), ia, "path"},
		"stat: file name too long": {stat(longName), ia, "path"},
		"stat: missing":            {stat("nothing"), nf, "nothing"},
		// A final link is described, not followed: no error, and it says so.
		"stat: a final link is described": {func(t *testing.T) error {
			st, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: sb, Path: "link-stat"})
			if err == nil && !st.GetFile().GetIsSymlink() {
				t.Fatalf("stat of a link: %v, want is_symlink", st.GetFile())
			}
			return err
		}, codes.OK, ""},
		"stat: empty sandbox name": {func(t *testing.T) error {
			_, err := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Path: "x"})
			return err
		}, ia, "sandbox"},

		// RemoveFile.
		"remove: the root":                   {remove("/", true), ia, "root"},
		"remove: the root as ''":             {remove("", false), ia, "root"},
		"remove: dot-dot":                    {remove("../x", true), ia, "path"},
		"remove: NUL byte":                   {remove("plain.txt\x00", false), ia, "path"},
		"remove: missing":                    {remove("nothing", false), nf, "nothing"},
		"remove: from a read-only host tree": {remove("/usr/bin/python3", false), pd, "read-only"},
		"remove: a non-empty directory":      {remove("full", false), codes.FailedPrecondition, "full"},
		// The link itself goes; what it points to stays.
		"remove: a link goes, not its target": {func(t *testing.T) error {
			before, _ := os.Stat("/etc/passwd")
			_, err := c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Sandbox: sb, Path: "link-remove", Recursive: true})
			if after, serr := os.Stat("/etc/passwd"); serr != nil || before == nil || after.Size() != before.Size() {
				t.Fatalf("/etc/passwd after removing a link to it: %v, %v", after, serr)
			}
			if _, serr := c.StatFile(ctx(t), &sandpodv1.StatFileRequest{Sandbox: sb, Path: "link-remove"}); err == nil && serr == nil {
				t.Fatal("the link is still there")
			}
			return err
		}, codes.OK, ""},
		"remove: empty sandbox name": {func(t *testing.T) error {
			_, err := c.RemoveFile(ctx(t), &sandpodv1.RemoveFileRequest{Path: "x"})
			return err
		}, ia, "sandbox"},

		// MakeDir.
		"mkdir: exists": {func(t *testing.T) error {
			if _, err := c.MakeDir(ctx(t), &sandpodv1.MakeDirRequest{Sandbox: sb, Path: "d"}); err != nil {
				return err
			}
			_, err := c.MakeDir(ctx(t), &sandpodv1.MakeDirRequest{Sandbox: sb, Path: "d"})
			return err
		}, codes.AlreadyExists, "d"},
		"mkdir: the root":                 {mkdir(&sandpodv1.MakeDirRequest{Path: "/"}), codes.AlreadyExists, "/"},
		"mkdir: bad mode":                 {mkdir(&sandpodv1.MakeDirRequest{Path: "m", Mode: 0o4777}), ia, "mode"},
		"mkdir: dot-dot":                  {mkdir(&sandpodv1.MakeDirRequest{Path: "../d", Parents: true}), ia, "path"},
		"mkdir: NUL byte":                 {mkdir(&sandpodv1.MakeDirRequest{Path: "d\x00"}), ia, "path"},
		"mkdir: file name too long":       {mkdir(&sandpodv1.MakeDirRequest{Path: longName}), ia, "path"},
		"mkdir: missing parent":           {mkdir(&sandpodv1.MakeDirRequest{Path: "no/parent"}), nf, "no/parent"},
		"mkdir: parent is a file":         {mkdir(&sandpodv1.MakeDirRequest{Path: "plain.txt/d", Parents: true}), ia, "plain.txt/d"},
		"mkdir: in a read-only host tree": {mkdir(&sandpodv1.MakeDirRequest{Path: "/usr/evil"}), pd, "read-only"},
		"mkdir: empty sandbox name":       {mkdir(&sandpodv1.MakeDirRequest{Namespace: "default", Path: "x"}), ia, "sandbox"},
	}
}

func chunks(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	return out
}
