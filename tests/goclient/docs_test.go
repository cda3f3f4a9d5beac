package goclient_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runnableMarker, on the line before a code fence in the Markdown docs,
// marks a block a reader can paste and run; GitHub does not show it.
const runnableMarker = "<!-- runnable -->"

// The Go blocks of these documents that are marked runnable, with how many
// there are at least (so that losing the markers does not pass unseen).
var goDocs = map[string]int{"README.md": 1, "docs/go.md": 2}

// docProgram makes a program of a document's runnable Go blocks, run in
// order in one function body as a reader would paste them into theirs: it
// may use ctx and token and return an error.
const docProgram = `package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

var _, _, _, _ = errors.Is, log.Printf, time.Second, sandpod.Dial

func main() {
	if err := run(context.Background(), os.Getenv("SANDPOD_TOKEN")); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, token string) error {
	{
%s
	}
	return nil
}
`

// TestDocsGoBlocksRun compiles the runnable Go blocks of the README and
// docs/go.md against the client's module (a scratch module with replace
// directives) and runs them against the test server, its address in place
// of 127.0.0.1:50051.
func TestDocsGoBlocksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs programs")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err) // go test itself runs from one
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	for doc, least := range goDocs {
		t.Run(doc, func(t *testing.T) {
			blocks := runnableBlocks(t, filepath.Join(repo, doc), "go")
			if len(blocks) < least {
				t.Fatalf("%s has %d runnable Go blocks, want at least %d", doc, len(blocks), least)
			}
			body := strings.ReplaceAll(strings.Join(blocks, "\n"), "127.0.0.1:50051", serverAddr)
			dir := t.TempDir()
			// The client's module only, as a reader's program has it.
			gomod := fmt.Sprintf("module doccheck\n\ngo 1.25.0\n\nrequire github.com/sandpod/sandpod/clients/go v0.0.0\n\n"+
				"replace github.com/sandpod/sandpod/clients/go => %s\n\nreplace github.com/sandpod/sandpod/proto => %s\n",
				filepath.Join(repo, "clients", "go"), filepath.Join(repo, "proto"))
			sum, err := os.ReadFile(filepath.Join(repo, "clients", "go", "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string]string{"go.mod": gomod, "go.sum": string(sum), "main.go": fmt.Sprintf(docProgram, body)} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			build := exec.Command(goBin, "build", "-o", "doc", ".")
			build.Dir = dir
			// Offline: everything comes from the client's requirements.
			build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("the Go blocks of %s do not compile: %v\n%s\n--- main.go ---\n%s", doc, err, out, fmt.Sprintf(docProgram, body))
			}
			run := exec.Command(filepath.Join(dir, "doc"))
			run.Env = append(os.Environ(), "SANDPOD_ADDRESS="+serverAddr)
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("the Go blocks of %s fail: %v\n%s", doc, err, out)
			}
			if !strings.Contains(string(out), "42\n") {
				t.Errorf("the Go blocks of %s printed %q, want 42 among it", doc, out)
			}
		})
	}
}

// runnableBlocks returns the code of the blocks of language lang marked
// runnable in the Markdown file at path, in order.
func runnableBlocks(t *testing.T, path, lang string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur []string
	marked, in := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case in && fence:
			blocks = append(blocks, strings.Join(cur, "\n"))
			in, cur = false, nil
		case in:
			cur = append(cur, line)
		case marked && fence && strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")) == lang:
			in, marked = true, false
		case marked && fence:
			marked = false // another language: the Python side runs it
		case marked:
			t.Fatalf("%s:%d: %s must be followed by a code fence", path, n-1, runnableMarker)
		case strings.TrimSpace(line) == runnableMarker:
			marked = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}
