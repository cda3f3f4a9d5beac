package integration

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sandpod/sandpod/tests/testserver"
)

// manualTemplate has no pool and does not resume by itself; talker has a
// main program that writes to the sandbox's log.
const manualTemplate = `---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: manual
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
---
apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: talker
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: docker.io/local/python:3
        command: ["sh", "-c", "echo main program says hi; exec sleep 100000"]
`

func TestCLIBadInput(t *testing.T) {
	srv := startServer(t, defaultConfig+manualTemplate)
	c := newCLI(t, srv.Addr())
	name := decodeJSON[cliSandbox](t, c.ok("claim", "python", "-o", "json")).Name
	manual := decodeJSON[cliSandbox](t, c.ok("claim", "manual", "-o", "json")).Name
	c.ok("suspend", manual)

	for _, tc := range []struct {
		args  []string
		code  int
		parts []string
	}{
		{[]string{"get", "nope"}, 67, []string{`"nope" not found`, "SANDBOX_NOT_FOUND"}},
		{[]string{"exec", "nope", "--", "true"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"suspend", "nope"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"extend", "nope", "1h"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"rm", "nope"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"expose", "nope", "8080"}, 67, []string{"expose", "SANDBOX_NOT_FOUND"}},
		{[]string{"logs", "nope"}, 67, []string{"SANDBOX_NOT_FOUND"}},
		{[]string{"claim", "no-such-template"}, 67, []string{"no-such-template"}},
		{[]string{"exec", manual, "--", "true"}, 68, []string{"failed precondition", "suspended"}},
		// manual has no pool: a cold start cannot be ready within 1 ms (a
		// warm claim of python sometimes was).
		{[]string{"claim", "manual", "--wait", "1ms"}, 124, []string{"no ready sandbox of manual within 1ms"}},
		{[]string{"extend", name, "soon"}, 2, []string{`"soon" is not a duration`}},
		{[]string{"extend", name, "0s"}, 2, []string{"must be positive"}},
		{[]string{"claim", "python", "--ttl", "forever"}, 2, []string{"--ttl"}},
		{[]string{"expose", name, "0"}, 2, []string{"from 1 to 65535"}},
		{[]string{"expose", name, "65536"}, 2, []string{"from 1 to 65535"}},
		{[]string{"expose", name, "http"}, 2, []string{"from 1 to 65535"}},
		{[]string{"expose", name, "8080"}, 79, []string{"not available on this server"}},
		{[]string{"logs", name}, 79, []string{"no log call", "agent.log", "--state-dir"}},
		{[]string{"cp", "./missing.txt", name + ":x"}, 66, []string{"missing.txt", "no such file"}},
		{[]string{"cp", name + ":missing.txt", "./x"}, 67, []string{"FILE_NOT_FOUND"}},
		{[]string{"cp", "a", "b"}, 2, []string{"NAME:PATH"}},
		{[]string{"ls", "-o", "xml"}, 2, []string{`"xml"`}},
		{[]string{"ls", "-l", "team in (("}, 65, []string{"invalid argument", "label_selector"}},
		{[]string{"no-such-command"}, 2, []string{"unknown command"}},
		{[]string{"get"}, 2, []string{"NAME"}},
		{[]string{}, 2, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := c.run(tc.args...)
			r.want(t, tc.code, tc.parts...)
			if tc.code != 0 && tc.code != 1 && len(tc.parts) > 0 && !strings.HasPrefix(r.stderr, "sandpod: ") {
				t.Fatalf("the error line does not start with sandpod: %q", r.stderr)
			}
		})
	}

	t.Run("cp from a sandbox makes no links and writes through none", func(t *testing.T) {
		c.ok("exec", name, "--", "sh", "-c", "mkdir -p trap && echo data > trap/f && ln -s /etc trap/etc-link && ln -s /etc/passwd trap/passwd-link")
		r := c.run("cp", name+":trap", "./trap-copy")
		r.want(t, 0, "skipped the symbolic link trap/etc-link", "skipped the symbolic link trap/passwd-link")
		if got, err := os.ReadFile(filepath.Join(c.home, "trap-copy/f")); err != nil || string(got) != "data\n" {
			t.Fatalf("trap-copy/f: %q %v", got, err)
		}
		for _, l := range []string{"etc-link", "passwd-link"} {
			if _, err := os.Lstat(filepath.Join(c.home, "trap-copy", l)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("trap-copy/%s exists (%v)", l, err)
			}
		}
		// A link already on this machine where a file of the tree goes is
		// not written through.
		victim := filepath.Join(c.home, "victim")
		if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(c.home, "merge/trap"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(c.home, "merge/trap/f")); err != nil {
			t.Fatal(err)
		}
		c.run("cp", name+":trap", "./merge").want(t, 73, "merge/trap/f")
		if got, _ := os.ReadFile(victim); string(got) != "mine\n" {
			t.Fatalf("the file behind the link was overwritten: %q", got)
		}
	})

	t.Run("logs from the state directory", func(t *testing.T) {
		talker := decodeJSON[cliSandbox](t, c.ok("claim", "talker", "-o", "json")).Name
		eventually(t, "the main program's line in the log", func() bool {
			return strings.Contains(c.ok("logs", talker, "--state-dir", srv.StateDir()), "main program says hi")
		})
		c.run("logs", talker).want(t, 79, "--state-dir", "agent.log")
		c.run("logs", talker, "--state-dir", filepath.Join(c.home, "not-a-state-dir")).want(t, 66, "no log at")
	})

	t.Run("server not reachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nobody listens there now
		start := time.Now()
		r := c.run("--address", addr, "ls")
		r.want(t, 69, "no sandpod server at "+addr, "--address")
		// Fails fast: the client's connect timeout (3s), not its retry budget.
		if took := time.Since(start); took > 60*time.Second {
			t.Fatalf("took %s to give up", took)
		}
		if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("more than one line: %q", r.stderr)
		}
	})

	t.Run("config file that does not parse", func(t *testing.T) {
		bad := filepath.Join(c.home, "bad.yaml")
		if err := os.WriteFile(bad, []byte("adress: 127.0.0.1:1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.run("--config", bad, "ls").want(t, 78, `unknown field "adress"`)
		c.runIn("", []string{"SANDPOD_CONFIG=" + filepath.Join(c.home, "nope.yaml")}, "ls").want(t, 78, "nope.yaml", "SANDPOD_CONFIG")
	})
}

// TestCLIConfigPrecedence: flag > environment > config file > default, for
// the address and the token, against a server that requires a token.
func TestCLIConfigPrecedence(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Token: "right-token"})
	c := newCLI(t, "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	l.Close()

	cfgDir := filepath.Join(c.home, ".config", "sandpod")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeConfig := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The default file (~/.config/sandpod/config.yaml) is read without
	// being named.
	writeConfig(filepath.Join(cfgDir, "config.yaml"), "address: "+srv.Addr()+"\ntoken: right-token\n")
	if out := c.ok("pools", "-o", "name"); out != "python\n" {
		t.Fatalf("pools with the default config file: %q", out)
	}
	cfg := decodeJSON[struct {
		Address  string
		TokenSet bool
		Sources  map[string]string
	}](t, c.ok("config", "-o", "json"))
	if cfg.Address != srv.Addr() || !cfg.TokenSet || !strings.HasPrefix(cfg.Sources["address"], "config ") {
		t.Fatalf("config -o json: %+v", cfg)
	}

	// The environment beats the file...
	r := c.runIn("", []string{"SANDPOD_ADDRESS=" + deadAddr}, "ls")
	r.want(t, 69, deadAddr, "$SANDPOD_ADDRESS")
	c.runIn("", []string{"SANDPOD_TOKEN=wrong"}, "ls").want(t, 77, "$SANDPOD_TOKEN")
	// ...and the flag beats the environment.
	if r := c.runIn("", []string{"SANDPOD_ADDRESS=" + deadAddr, "SANDPOD_TOKEN=wrong"}, "--address", srv.Addr(), "--token", "right-token", "pools", "-o", "name"); r.code != 0 {
		t.Fatalf("flags over a wrong environment: %+v", r)
	}
	c.runIn("", []string{"SANDPOD_TOKEN=right-token"}, "--token", "wrong", "ls").want(t, 77, "flag --token")

	// $SANDPOD_CONFIG names another file, which replaces the default one.
	other := filepath.Join(c.home, "other.yaml")
	writeConfig(other, "address: "+deadAddr+"\n")
	c.runIn("", []string{"SANDPOD_CONFIG=" + other}, "ls").want(t, 69, deadAddr, "config "+other)
	// No token anywhere: the server says so.
	writeConfig(other, "address: "+srv.Addr()+"\n")
	c.runIn("", []string{"SANDPOD_CONFIG=" + other}, "ls").want(t, 77, "no token was given")
}

// TestCLITLS: --tls-ca (or tlsCA: in the config file) turns TLS on with a
// private CA, for a loopback address too.
func TestCLITLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir, "cli")
	roots, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots)
	srv := testserver.Start(t, testserver.Options{
		ExtraArgs:   []string{"--tls-cert", certFile, "--tls-key", keyFile},
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool}))},
	})
	c := newCLI(t, srv.Addr())
	if out := c.ok("--tls-ca", certFile, "pools", "-o", "name"); out != "python\n" {
		t.Fatalf("pools over TLS: %q", out)
	}
	// Plaintext to a TLS server: the server is not reachable.
	c.run("pools").want(t, 69, srv.Addr())
	cfg := filepath.Join(c.home, "tls.yaml")
	if err := os.WriteFile(cfg, []byte("tlsCA: "+certFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("--config", cfg, "templates", "-o", "name"); out != "python\n" {
		t.Fatalf("templates with tlsCA in the config file: %q", out)
	}
	c.run("--tls-ca", cfg, "pools").want(t, 78, "no PEM certificate")
	c.run("--tls-ca", cfg, "--insecure", "pools").want(t, 2, "contradict")
}
