package sandpod_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clientModules are the modules of the client: this one and the generated
// stubs it imports.
var clientModules = []string{"github.com/sandpod/sandpod/clients/go", "github.com/sandpod/sandpod/proto"}

// allowedDeps are the modules the client may require and link: gRPC,
// protobuf, backoff and what gRPC itself links (the googleapis status and
// annotation types, x/net for HTTP/2, x/sys, x/text).
var allowedDeps = []string{
	"github.com/cenkalti/backoff/v4",
	"golang.org/x/net",
	"golang.org/x/sys",
	"golang.org/x/text",
	"google.golang.org/genproto/googleapis/api",
	"google.golang.org/genproto/googleapis/rpc",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
}

// forbiddenDeps may not be anywhere in a consumer's module graph: the
// server's dependencies (the root module, Kubernetes, controller-runtime,
// the HTTP gateway, metrics, storage, the CLI).
var forbiddenDeps = []string{
	"k8s.io/",
	"sigs.k8s.io/",
	"github.com/grpc-ecosystem/",
	"github.com/prometheus/",
	"go.etcd.io/",
	"github.com/spf13/",
	"github.com/opencontainers/",
}

// TestConsumerNeedsOnlyTheClient builds, offline, a program in a module of
// its own that requires only this module (its stubs module found through a
// replace directive, as the tagged version would be), then checks its
// module graph: the client requires only gRPC, protobuf and backoff (and
// what they bring), the program links nothing else, and nothing of the
// server (the root module, Kubernetes, the gateway) is in the graph at all.
func TestConsumerNeedsOnlyTheClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err) // go test itself runs from one
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf(`module example.com/consumer

go 1.25.0

require github.com/sandpod/sandpod/clients/go v0.0.0

replace github.com/sandpod/sandpod/clients/go => %s

replace github.com/sandpod/sandpod/proto => %s
`, here, filepath.Join(here, "..", "..", "proto"))
	const main = `package main

import (
	"context"
	"fmt"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func main() {
	c, err := sandpod.Dial(context.Background(), "127.0.0.1:1")
	fmt.Println(c != nil, err)
}
`
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"go.mod": gomod, "go.sum": string(sum), "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		// Offline, from the module cache that built this module.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	run("build", "-o", "consumer", ".")

	allowed := func(mod string) bool {
		return mod == "example.com/consumer" || slices.Contains(clientModules, mod) || slices.Contains(allowedDeps, mod)
	}
	// What the program links.
	for _, mod := range lines(run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")) {
		if !allowed(mod) {
			t.Errorf("the consumer links a package of %s", mod)
		}
	}
	// What the client's modules require.
	for _, edge := range lines(run("mod", "graph")) {
		from, to, _ := strings.Cut(edge, " ")
		from, _, _ = strings.Cut(from, "@")
		to, _, _ = strings.Cut(to, "@")
		if slices.Contains(clientModules, from) && to != "go" && to != "toolchain" && !allowed(to) {
			t.Errorf("%s requires %s", from, to)
		}
	}
	// Everything in the graph, what gRPC's own go.mod lists included.
	graph := lines(run("list", "-m", "all"))
	for _, m := range graph {
		path, _, _ := strings.Cut(m, " ")
		if path == "github.com/sandpod/sandpod" {
			t.Errorf("the root module (the server) is in the consumer's module graph")
		}
		for _, bad := range forbiddenDeps {
			if strings.HasPrefix(path, bad) {
				t.Errorf("%s is in the consumer's module graph", m)
			}
		}
	}
	t.Logf("the consumer's module graph (%d modules):\n%s", len(graph), strings.Join(graph, "\n"))
}

// lines returns the non-empty lines of s, deduplicated in order.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
