package sandpod

import (
	"context"
	"testing"
)

func TestIsLocalAddress(t *testing.T) {
	tests := map[string]bool{
		"127.0.0.1:7070":            true,
		"localhost:7070":            true,
		"[::1]:7070":                true,
		"dns:///localhost:7070":     true,
		"unix:///run/sandpod.sock":  true,
		"unix:sandpod.sock":         true,
		"sandpod.example.com:443":   false,
		"10.0.0.3:7070":             false,
		"dns:///sandpod.svc:7070":   false,
		"passthrough:///10.1.1.1:1": false,
	}
	for addr, want := range tests {
		if got := isLocalAddress(addr); got != want {
			t.Errorf("isLocalAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestOptions(t *testing.T) {
	cfg := newConfig([]Option{WithNamespace("team"), WithInsecure(), WithToken("t")})
	if cfg.namespace != "team" || !cfg.insecure || !cfg.transport || cfg.token != "t" {
		t.Errorf("config = %+v", cfg)
	}
	cfg = newConfig([]Option{WithTLS(nil)})
	if cfg.tlsConfig == nil || cfg.insecure {
		t.Errorf("WithTLS(nil) = %+v", cfg)
	}
	cfg = newConfig([]Option{WithNamespace("")})
	if cfg.namespace != DefaultNamespace {
		t.Errorf("empty namespace = %q", cfg.namespace)
	}
	if cfg.connectTimeout != DefaultConnectTimeout {
		t.Errorf("connect timeout = %v, want %v by default", cfg.connectTimeout, DefaultConnectTimeout)
	}
	if cfg = newConfig([]Option{WithConnectTimeout(0)}); cfg.connectTimeout != 0 {
		t.Errorf("WithConnectTimeout(0) = %v", cfg.connectTimeout)
	}

	sc := newSandboxConfig([]SandboxOption{WithEnv(map[string]string{"A": "1"}), WithEnv(map[string]string{"B": "2"}), WithLabels(map[string]string{"l": "v"})})
	if len(sc.env) != 2 || sc.labels["l"] != "v" || sc.requestID == "" {
		t.Errorf("sandbox config = %+v", sc)
	}
	if newSandboxConfig(nil).requestID == sc.requestID {
		t.Errorf("request ids repeat")
	}
	if got := newSandboxConfig([]SandboxOption{WithRequestID("mine")}).requestID; got != "mine" {
		t.Errorf("request id = %q", got)
	}
}

func TestInNamespace(t *testing.T) {
	c, err := Dial(context.Background(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := c.InNamespace("team")
	if c.Namespace() != "default" || other.Namespace() != "team" || other.Sandbox("x").Namespace() != "team" {
		t.Errorf("namespaces: %q %q", c.Namespace(), other.Namespace())
	}
}

func TestEnvironmentDefaults(t *testing.T) {
	env := map[string]string{EnvToken: "from-env", EnvNamespace: "team-env"}
	cfg := newConfig(nil)
	cfg.fromEnvironment(func(k string) string { return env[k] })
	if cfg.token != "from-env" || cfg.namespace != "team-env" {
		t.Errorf("from the environment: %+v", cfg)
	}
	cfg = newConfig([]Option{WithToken(""), WithNamespace("mine")})
	cfg.fromEnvironment(func(k string) string { return env[k] })
	if cfg.token != "" || cfg.namespace != "mine" {
		t.Errorf("options win over the environment: %+v", cfg)
	}

	t.Setenv(EnvAddress, "127.0.0.1:1")
	t.Setenv(EnvNamespace, "ns-from-env")
	c, err := Dial(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.conn.CanonicalTarget() != "dns:///127.0.0.1:1" || c.Namespace() != "ns-from-env" {
		t.Errorf("target %q, namespace %q", c.conn.CanonicalTarget(), c.Namespace())
	}
}
