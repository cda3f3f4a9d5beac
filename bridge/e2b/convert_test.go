package e2b

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestTemplateFor(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "python",
		"base":                "python",
		"code-interpreter-v1": "python",
		"cold":                "cold",
		"python":              "python",
	} {
		if got := templateFor(in, "python"); got != want {
			t.Errorf("templateFor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPaths(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "/workspace",
		".":                    "/workspace",
		"a.txt":                "/workspace/a.txt",
		"dir/../b":             "/workspace/b",
		"/home/user":           "/workspace",
		"/home/user/":          "/workspace",
		"/home/user/x/y":       "/workspace/x/y",
		"/home/username":       "/home/username",
		"/tmp/f":               "/tmp/f",
		"/home/user/../../etc": "/etc",
	} {
		if got := toSandpodPath(in); got != want {
			t.Errorf("toSandpodPath(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"/workspace":       "/home/user",
		"/workspace/a":     "/home/user/a",
		"a/b":              "/home/user/a/b",
		"/workspaces/x":    "/workspaces/x",
		"/tmp/two.txt":     "/tmp/two.txt",
		"/workspace/d/../": "/home/user",
	} {
		if got := toE2BPath(in); got != want {
			t.Errorf("toE2BPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMetadata(t *testing.T) {
	md := map[string]string{"suite": "e2b", "tag": "x1"}
	labels := metadataLabels(md)
	if diff := cmp.Diff(map[string]string{"metadata.e2b.dev/suite": "e2b", "metadata.e2b.dev/tag": "x1"}, labels); diff != "" {
		t.Errorf("metadataLabels (-want +got):\n%s", diff)
	}
	labels["team"] = "not metadata"
	if diff := cmp.Diff(md, metadataOf(labels)); diff != "" {
		t.Errorf("metadataOf (-want +got):\n%s", diff)
	}
	if metadataLabels(nil) != nil {
		t.Error("no metadata should make no labels")
	}
}

func TestMetadataSelector(t *testing.T) {
	for name, tc := range map[string]struct {
		query, want string
		wantErr     bool
	}{
		"none":    {"", "", false},
		"one":     {"tag=x1", "metadata.e2b.dev/tag=x1", false},
		"two":     {"b=2&a=1", "metadata.e2b.dev/a=1,metadata.e2b.dev/b=2", false},
		"escaped": {"my%2520key=v%2520w", "metadata.e2b.dev/my key=v w", false},
		"bad":     {"a=%zz", "", true},
	} {
		got, err := metadataSelector(tc.query)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: metadataSelector(%q) = %q, %v; want %q (error: %v)", name, tc.query, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestState(t *testing.T) {
	for phase, want := range map[sandpodv1.Phase]string{
		sandpodv1.Phase_PHASE_RUNNING:   "running",
		sandpodv1.Phase_PHASE_PENDING:   "running",
		sandpodv1.Phase_PHASE_SUSPENDED: "paused",
		sandpodv1.Phase_PHASE_PAUSED:    "paused",
	} {
		if got := state(&sandpodv1.Sandbox{Phase: phase}); got != want {
			t.Errorf("state(%v) = %q, want %q", phase, got, want)
		}
	}
}
