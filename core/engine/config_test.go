package engine

import (
	"fmt"
	"slices"
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

func TestParseSandboxQuota(t *testing.T) {
	defs, err := ParseDefinitions("t", []byte(strings.Replace(tmpl, "defaultTTL: 1h,", "defaultTTL: 1h, defaultLease: 30s,", 1)+
		"---\napiVersion: sandpod.dev/v1alpha1\nkind: SandboxQuota\nmetadata: {name: team}\nspec: {maxSandboxes: 5, maxClaimsPerMinute: 60, pools: [p]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(defs.Quotas) != 1 {
		t.Fatalf("quotas %+v", defs.Quotas)
	}
	q := defs.Quotas[0]
	if q.Namespace != DefaultNamespace || *q.Spec.MaxSandboxes != 5 || *q.Spec.MaxClaimsPerMinute != 60 || q.Spec.Pools[0] != "p" {
		t.Errorf("quota %+v", q)
	}
	rs, err := resolveTemplate(&defs.Templates[0])
	if err != nil || rs.DefaultLease.Duration.String() != "30s" {
		t.Errorf("defaultLease %v (%v)", rs.DefaultLease, err)
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
		"sidecar":                    {strings.Replace(strings.Replace(tmpl, "      - name: sandbox\n", "      - {name: redis, image: redis}\n      - name: sandbox\n", 1), "  autoResume: true", "  autoResume: true\n  agentContainer: sandbox", 1), "sidecars (redis) need Kubernetes"},
		"unknown agentContainer":     {strings.Replace(tmpl, "  autoResume: true", "  autoResume: true\n  agentContainer: main", 1), `agentContainer "main" names no container`},
		"valueFrom env":              {strings.Replace(tmpl, `env: [{name: A, value: "1"}]`, `env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]`, 1), "valueFrom"},
		"pool of a missing template": {"apiVersion: sandpod.dev/v1alpha1\nkind: SandboxWarmPool\nmetadata: {name: p}\nspec: {templateRef: {name: nope}, replicas: 1}\n", "not defined"},
		"pool too big":               {tmpl + "---\napiVersion: sandpod.dev/v1alpha1\nkind: SandboxWarmPool\nmetadata: {name: p}\nspec: {templateRef: {name: py}, replicas: 5000}\n", "out of range"},
		"template twice":             {tmpl + "---\n" + tmpl, "twice"},
		"not yaml":                   {"{{{", "document 1"},
		"egress allowlist":           {strings.Replace(tmpl, "networkPolicy: {egress: None}", "networkPolicy: {egress: Allowlist, allowedEgress: [{cidr: 10.0.0.0/8}]}", 1), "Allowlist is enforced only on Kubernetes"},
		"allowlist with egress none": {strings.Replace(tmpl, "networkPolicy: {egress: None}", "networkPolicy: {egress: None, allowedEgress: [{cidr: 10.0.0.0/8}]}", 1), "allowedEgress goes with egress: Allowlist"},
		"quota without limits":       {"apiVersion: sandpod.dev/v1alpha1\nkind: SandboxQuota\nmetadata: {name: q}\nspec: {templates: [py]}\n", "maxSandboxes, spec.maxClaimsPerMinute or both"},
		"negative quota":             {"apiVersion: sandpod.dev/v1alpha1\nkind: SandboxQuota\nmetadata: {name: q}\nspec: {maxSandboxes: -1}\n", "negative"},
		"lease too short":            {strings.Replace(tmpl, "defaultTTL: 1h,", "defaultTTL: 1h, defaultLease: 1s,", 1), "defaultLease"},
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

func TestTemplateSecurityForTheLocalEngine(t *testing.T) {
	base := "apiVersion: sandpod.dev/v1alpha1\nkind: SandboxTemplate\nmetadata: {name: a}\nspec: {podTemplate: {spec: %s}}\n"
	cases := map[string]struct {
		pod, wantErr string
		uid, gid     uint32
		paths        []hostMount
	}{
		"default user": {pod: `{containers: [{name: c, image: i}]}`, uid: DefaultSandboxUID, gid: DefaultSandboxUID},
		"root asked":   {pod: `{securityContext: {runAsUser: 0}, containers: [{name: c, image: i}]}`, uid: 0, gid: 0},
		"container wins over pod": {pod: `{securityContext: {runAsUser: 5, runAsGroup: 6}, containers: [{name: c, image: i, securityContext: {runAsUser: 7}}]}`,
			uid: 7, gid: 6},
		"uid beyond the range": {pod: `{securityContext: {runAsUser: 70000}, containers: [{name: c, image: i}]}`, wantErr: "outside 0..65535"},
		"host tree": {pod: `{volumes: [{name: t, hostPath: {path: /opt/tools/}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /tools}]}]}`,
			uid: DefaultSandboxUID, gid: DefaultSandboxUID, paths: []hostMount{{Source: "/opt/tools", Destination: "/tools"}}},
		"host root refused":      {pod: `{volumes: [{name: t, hostPath: {path: /}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /h}]}]}`, wantErr: "may not be mounted"},
		"home refused":           {pod: `{volumes: [{name: t, hostPath: {path: /home/me}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /h}]}]}`, wantErr: "may not be mounted"},
		"parent of /var refused": {pod: `{volumes: [{name: t, hostPath: {path: /var/lib}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /h}]}]}`, wantErr: "may not be mounted"},
		"over the workspace":     {pod: `{volumes: [{name: t, hostPath: {path: /opt}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /workspace/x}]}]}`, wantErr: "reserved"},
		"relative host path":     {pod: `{volumes: [{name: t, hostPath: {path: opt}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /o}]}]}`, wantErr: "absolute"},
		"other volume kinds ignored": {pod: `{volumes: [{name: t, emptyDir: {}}], containers: [{name: c, image: i, volumeMounts: [{name: t, mountPath: /o}]}]}`,
			uid: DefaultSandboxUID, gid: DefaultSandboxUID},
	}
	for name, tc := range cases {
		defs, err := ParseDefinitions(name, []byte(fmt.Sprintf(base, tc.pod)))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		rs, _ := resolveTemplate(&defs.Templates[0])
		uid, gid := rs.runAs()
		if uid != tc.uid || gid != tc.gid || !slices.Equal(rs.HostPaths, tc.paths) {
			t.Errorf("%s: run as %d:%d, host paths %v; want %d:%d, %v", name, uid, gid, rs.HostPaths, tc.uid, tc.gid, tc.paths)
		}
	}
}
