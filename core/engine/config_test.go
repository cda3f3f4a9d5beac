package engine

import (
	"strings"
	"testing"
)

const tmpl = `apiVersion: sandpod.dev/v1alpha1
kind: SandboxTemplate
metadata: {name: py}
spec:
  podTemplate:
    spec:
      containers:
      - name: sandbox
        image: img
        command: [python3, -m, http.server]
        env: [{name: A, value: "1"}]
        resources: {limits: {memory: 256Mi, cpu: 500m}}
  lifecycle: {defaultTTL: 1h, idleTimeout: 5m, shutdownPolicy: Retain}
  autoResume: true
  networkPolicy: {egress: None}
`

func TestParseDefinitions(t *testing.T) {
	defs, err := ParseDefinitions("t", []byte(tmpl+"---\napiVersion: sandpod.dev/v1alpha1\nkind: SandboxWarmPool\nmetadata: {name: p}\nspec: {templateRef: {name: py}, replicas: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(defs.Templates) != 1 || len(defs.Pools) != 1 || defs.Pools[0].Namespace != DefaultNamespace {
		t.Fatalf("defs = %+v", defs)
	}
	rs, err := resolveTemplate(&defs.Templates[0])
	if err != nil {
		t.Fatal(err)
	}
	if rs.MemoryBytes != 256<<20 || rs.CPUMillis != 500 || !rs.NetIsolated || !rs.AutoResume ||
		rs.Env["A"] != "1" || strings.Join(rs.Command, " ") != "python3 -m http.server" ||
		rs.IdleTimeout.Duration.Minutes() != 5 || rs.DefaultTTL.Duration.Hours() != 1 || rs.ShutdownPolicy != "Retain" {
		t.Fatalf("resolved = %+v", rs)
	}
	if rs.Hash == "" || rs.Hash != rs.specHash() {
		t.Fatalf("hash %q is not the hash of the spec", rs.Hash)
	}
}

func TestParseDefinitionsRejects(t *testing.T) {
	cases := map[string]struct {
		yaml, wantErr string
	}{
		"wrong api version":          {"apiVersion: v1\nkind: SandboxTemplate\nmetadata: {name: a}\n", "apiVersion"},
		"unknown kind":               {"apiVersion: sandpod.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: a}\n", "not served"},
		"unknown field":              {strings.Replace(tmpl, "autoResume: true", "autoResum: true", 1), "autoResum"},
		"bad name":                   {strings.Replace(tmpl, "name: py}", "name: Py_1}", 1), "DNS label"},
		"no containers":              {"apiVersion: sandpod.dev/v1alpha1\nkind: SandboxTemplate\nmetadata: {name: a}\nspec: {podTemplate: {spec: {containers: []}}}\n", "containers is empty"},
		"valueFrom env":              {strings.Replace(tmpl, `env: [{name: A, value: "1"}]`, `env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]`, 1), "valueFrom"},
		"pool of a missing template": {"apiVersion: sandpod.dev/v1alpha1\nkind: SandboxWarmPool\nmetadata: {name: p}\nspec: {templateRef: {name: nope}, replicas: 1}\n", "not defined"},
		"pool too big":               {tmpl + "---\napiVersion: sandpod.dev/v1alpha1\nkind: SandboxWarmPool\nmetadata: {name: p}\nspec: {templateRef: {name: py}, replicas: 5000}\n", "out of range"},
		"template twice":             {tmpl + "---\n" + tmpl, "twice"},
		"not yaml":                   {"{{{", "document 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDefinitions("t", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}
