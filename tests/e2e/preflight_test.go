package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/preflight"
)

// sandpodBinary builds ./cmd/sandpod for the host once per test.
func sandpodBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandpod")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sandpod")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sandpod: %v\n%s", err, out)
	}
	return bin
}

// runPreflight runs `sandpod preflight ARGS -o json` against the bed and
// returns its report and exit code.
func runPreflight(t *testing.T, env *Env, bin string, args ...string) (preflight.Report, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"preflight", "--kubeconfig", env.Kubeconfig, "-o", "json"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sandpod preflight: %v", err)
	}
	var rep preflight.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("sandpod preflight -o json (exit %d): %v\nstdout: %s\nstderr: %s", code, err, out.String(), errb.String())
	}
	for _, r := range rep.Results {
		t.Logf("preflight %-32s %-4s %s", r.Check, r.Status, r.Detail)
	}
	return rep, code
}

func resultOf(t *testing.T, rep preflight.Report, check string) preflight.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Check == check {
			return r
		}
	}
	t.Fatalf("no %q row in the report", check)
	return preflight.Result{}
}

// TestPreflight: on the complete bed every check passes but
// VolumeSnapshotClasses, which warns: the bed's default StorageClass is a
// hostPath one without a snapshot class, and the check looks at the
// default class besides those the templates name (the bed's snapshots use
// StorageClass sandpod-csi). NetworkPolicy enforcement passes with
// kube-router on the bed, which always enforces policies, so the command
// exits 0. The Job of deploy/preflight.yaml comes to the same answer in the
// cluster. With the gvisor RuntimeClass taken away (and put back after), its
// row fails and so does the command. Not parallel: no other test may run
// while the RuntimeClass is gone.
func TestPreflight(t *testing.T) {
	env := Setup(t)
	ns := env.Namespace(t)
	tmpl := Template(ns, "isolated", PythonImage)
	gvisor := GVisor
	tmpl.Spec.RuntimeClassName = &gvisor
	env.Apply(t, tmpl)
	bin := sandpodBinary(t)

	rep, code := runPreflight(t, env, bin, "--probe-timeout", "3m")
	mustPass := []string{"API server", "CRDs", "RuntimeClass gvisor", "StorageClasses", "image volumes (agent delivery)",
		"RBAC of the controller", "RBAC of the bridge", "cluster DNS"}
	for _, c := range mustPass {
		if r := resultOf(t, rep, c); r.Status != preflight.Pass {
			t.Errorf("complete bed: %s = %s %q, want pass", c, r.Status, r.Detail)
		}
	}
	if r := resultOf(t, rep, "VolumeSnapshotClasses"); r.Status != preflight.Warn {
		t.Errorf("VolumeSnapshotClasses on the bed (no snapshot class for its default StorageClass): %s %q, want warn", r.Status, r.Detail)
	}
	if !strings.Contains(resultOf(t, rep, "RuntimeClass gvisor").Detail, ns+"/isolated") {
		t.Errorf("the gvisor row does not name the template that names it")
	}
	// The bed always enforces policies (kube-router): the row must pass,
	// and with nothing failing the command exits 0.
	np := resultOf(t, rep, "NetworkPolicy enforced")
	if np.Status != preflight.Pass {
		t.Errorf("NetworkPolicy probe on the bed: %s %q, want pass", np.Status, np.Detail)
	}
	if code != 0 {
		t.Errorf("exit code %d on the complete bed, want 0", code)
	}
	env.checkNoProbesLeft(t)

	env.preflightJob(t, true)

	// Take the gvisor RuntimeClass away; put it back whatever happens.
	ctx := Context(t)
	rcs := env.Clientset.NodeV1().RuntimeClasses()
	rc, err := rcs.Get(ctx, GVisor, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		_, err := rcs.Create(context.Background(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Labels: rc.Labels}, Handler: rc.Handler, Scheduling: rc.Scheduling, Overhead: rc.Overhead}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("restore the gvisor RuntimeClass: %v", err)
		}
	}
	t.Cleanup(restore)
	if err := rcs.Delete(ctx, GVisor, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, code = runPreflight(t, env, bin, "--skip-probes")
	restore()
	r := resultOf(t, rep, "RuntimeClass gvisor")
	if r.Status != preflight.Fail || !strings.Contains(r.Detail, "not found") || r.Fix == "" {
		t.Errorf("without the gvisor RuntimeClass: %s %q (fix %q), want fail: not found, and what to do", r.Status, r.Detail, r.Fix)
	}
	if code != 1 {
		t.Errorf("exit code %d without the gvisor RuntimeClass, want 1", code)
	}
	for _, c := range []string{"cluster DNS", "NetworkPolicy enforced"} {
		if r := resultOf(t, rep, c); r.Status != preflight.Warn || !strings.Contains(r.Detail, "skip-probes") {
			t.Errorf("--skip-probes: %s = %s %q, want a warning", c, r.Status, r.Detail)
		}
	}
}

// checkNoProbesLeft: the probe pods and their namespace are gone (the
// namespace may still be terminating).
func (e *Env) checkNoProbesLeft(t *testing.T) {
	t.Helper()
	ctx := Context(t)
	e.Eventually(t, "the probe namespace gone", func() (bool, string) {
		nss, err := e.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: preflight.LabelProbe})
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nss.Items {
			if n.DeletionTimestamp == nil {
				return false, "namespace " + n.Name + " not being deleted"
			}
		}
		return true, ""
	})
	pods, err := e.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: preflight.LabelProbe})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("probe pod %s/%s left behind", p.Namespace, p.Name)
		}
	}
}

// preflightJob applies deploy/preflight.yaml, waits for its Job, and checks
// its table and outcome (it succeeds exactly when nothing fails, so when
// NetworkPolicy is enforced on the bed); then deletes it all.
func (e *Env) preflightJob(t *testing.T, wantSuccess bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	manifest := filepath.Join("..", "..", "deploy", "preflight.yaml")
	if _, err := os.Stat(manifest); err != nil {
		t.Fatal(err)
	}
	if out, err := e.RunKubectl(ctx, "apply", "--server-side", "-f", manifest); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = e.RunKubectl(context.Background(), "delete", "--ignore-not-found", "--wait=false", "-f", manifest)
	})
	var outcome string
	e.Eventually(t, "the preflight Job to finish", func() (bool, string) {
		j, err := e.Clientset.BatchV1().Jobs("sandpod-system").Get(ctx, "sandpod-preflight", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range j.Status.Conditions {
			if (c.Type == "Complete" || c.Type == "Failed") && c.Status == "True" {
				outcome = string(c.Type)
				return true, ""
			}
		}
		return false, fmt.Sprintf("active %d", j.Status.Active)
	})
	logs, err := e.RunKubectl(ctx, "-n", "sandpod-system", "logs", "job/sandpod-preflight")
	t.Logf("preflight Job: %s\n%s", outcome, logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CHECK", "RBAC of the bridge", "cluster DNS", "passed,"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the Job's table lacks %q", want)
		}
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.HasPrefix(line, "cluster DNS") && !strings.Contains(line, "PASS") {
			t.Errorf("DNS from the Job: %s", line)
		}
	}
	if (outcome == "Complete") != wantSuccess {
		t.Errorf("Job %s, want success %v (as the command's exit code)", outcome, wantSuccess)
	}
}
