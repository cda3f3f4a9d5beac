package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestUninstallCheckHook renders the chart (the real helm, hack/helm.sh)
// with each uninstall.sandboxes and checks the pre-delete hook: every
// object is a pre-delete hook Helm deletes when it passes and replaces at
// the next try, the RBAC comes before the Job, the Job runs the mode it
// was given, and the ClusterRole grants delete only for delete.
func TestUninstallCheckHook(t *testing.T) {
	helm, chart := helmAndChart(t)
	render := func(set ...string) ([]map[string]any, error) {
		args := []string{"template", "sandpod", chart, "-n", "sandpod-system", "--skip-tests",
			"--show-only", "templates/uninstall-check.yaml"}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil {
			return nil, &renderError{string(out)}
		}
		f := filepath.Join(t.TempDir(), "hook.yaml")
		if err := os.WriteFile(f, out, 0o600); err != nil {
			t.Fatal(err)
		}
		return load(f)
	}

	for _, tt := range []struct {
		set   []string
		mode  string
		rules []any
	}{
		{nil, "refuse", []any{rule([]any{"sandboxes"}, "list")}},
		{[]string{"uninstall.sandboxes=keep"}, "keep", []any{rule([]any{"sandboxes"}, "list")}},
		{[]string{"uninstall.sandboxes=delete"}, "delete",
			[]any{rule([]any{"sandboxes", "sandboxclaims", "sandboxwarmpools", "sandboxsnapshots"}, "list", "delete")}},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			objs, err := render(tt.set...)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]map[string]any{}
			for _, o := range objs {
				kinds[str(o, "kind")] = o
				if got := str(o, "metadata", "annotations", "helm.sh/hook"); got != "pre-delete" {
					t.Errorf("%s: helm.sh/hook %q, want pre-delete", Key(o), got)
				}
				pol := strings.Split(str(o, "metadata", "annotations", "helm.sh/hook-delete-policy"), ",")
				if !slices.Contains(pol, "hook-succeeded") || !slices.Contains(pol, "before-hook-creation") {
					t.Errorf("%s: hook-delete-policy %v, want hook-succeeded and before-hook-creation (nothing left behind)", Key(o), pol)
				}
				if w := str(o, "metadata", "annotations", "helm.sh/hook-weight"); (str(o, "kind") == "Job") != (w == "0") {
					t.Errorf("%s: hook-weight %q; want the RBAC (-5) before the Job (0)", Key(o), w)
				}
			}
			for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"} {
				if kinds[k] == nil {
					t.Fatalf("no %s rendered (got %d objects)", k, len(objs))
				}
			}
			if got := get(kinds["ClusterRole"], "rules"); !reflect.DeepEqual(got, tt.rules) {
				t.Errorf("ClusterRole rules %v, want %v", got, tt.rules)
			}
			if got := str(kinds["Job"], "metadata", "annotations", "helm.sh/hook-output-log-policy"); got != "hook-failed" {
				t.Errorf("Job hook-output-log-policy %q, want hook-failed (helm prints the refusal)", got)
			}
			ctr := get(kinds["Job"], "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
			args := ctr["args"].([]any)
			for _, want := range []any{"uninstall-check", "--sandboxes=" + tt.mode, "--helm-release=sandpod", "--helm-namespace=sandpod-system", "--helm-revision=1"} {
				if !slices.Contains(args, want) {
					t.Errorf("Job args %v lack %v", args, want)
				}
			}
			if sa := str(kinds["Job"], "spec", "template", "spec", "serviceAccountName"); sa != str(kinds["ServiceAccount"], "metadata", "name") {
				t.Errorf("Job runs as %q, not the hook's ServiceAccount", sa)
			}
		})
	}
	t.Run("unknown value", func(t *testing.T) {
		_, err := render("uninstall.sandboxes=purge")
		if err == nil || !strings.Contains(err.Error(), "want refuse, keep or delete") {
			t.Errorf("render with uninstall.sandboxes=purge: %v, want it refused", err)
		}
	})
}

type renderError struct{ out string }

func (e *renderError) Error() string { return e.out }

func rule(resources []any, verbs ...string) map[string]any {
	v := make([]any, len(verbs))
	for i, s := range verbs {
		v[i] = s
	}
	return map[string]any{"apiGroups": []any{"sandpod.dev"}, "resources": resources, "verbs": v}
}

// helmAndChart finds the helm binary ($SANDPOD_HELM, else the one
// hack/helm.sh builds) and the chart's directory.
func helmAndChart(t *testing.T) (helm, chart string) {
	t.Helper()
	helm = os.Getenv("SANDPOD_HELM")
	if helm == "" {
		out, err := exec.Command("../../helm.sh", "--print").Output()
		if err != nil {
			t.Fatalf("hack/helm.sh --print: %v (or set SANDPOD_HELM)", err)
		}
		helm = strings.TrimSpace(string(out))
	}
	chart, err := filepath.Abs("../../../deploy/helm/sandpod")
	if err != nil {
		t.Fatal(err)
	}
	return helm, chart
}
