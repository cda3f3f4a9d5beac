package main

// agent-sandbox (sigs.k8s.io/agent-sandbox) on the node bed, for the side
// by side claims of testbed_compare.go: its CRDs applied from its module
// (hack/agent-sandbox.sh --crds) and its controller, built by
// hack/agent-sandbox.sh, run as a host process with the bed's admin
// kubeconfig, the extensions controllers (SandboxClaim, SandboxTemplate,
// SandboxWarmPool) on. At the end it goes again, CRDs included, so the bed
// is left as it was. Its API groups are agents.x-k8s.io and
// extensions.agents.x-k8s.io: no clash with sandpod.dev, though its short
// names (sandbox, sandboxclaim, ...) make kubectl's short forms ambiguous
// while they are installed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const asbVersion = "v1.0.1"

// asbBenchLabel marks the CRDs the benchmark applied, so a run that was
// interrupted before it deleted them has them deleted by the next.
const asbBenchLabel = "sandpod.dev/bench"

var (
	asbGroup    = "agents.x-k8s.io"
	asbExtGroup = "extensions.agents.x-k8s.io"
	asbCRDGVK   = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// agentSandbox is agent-sandbox installed on the bed for one comparison.
type agentSandbox struct {
	kc   client.Client
	crds []string // names of the CRDs applied
	cmd  *exec.Cmd
	done chan error // the controller's exit
	log  string
}

// asbLookup finds the controller binary hack/agent-sandbox.sh built and the
// CRDs of its module, without building: a benchmark run does not start a
// two-minute build on its own.
func asbLookup(ctx context.Context) (bin, crds string, err error) {
	script := func(arg string) (string, error) {
		cmd := exec.CommandContext(ctx, "hack/agent-sandbox.sh", arg)
		cmd.Env = append(os.Environ(), "AGENT_SANDBOX_BUILD=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("hack/agent-sandbox.sh %s: %v: %s", arg, err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	if bin, err = script("--print"); err != nil {
		return "", "", err
	}
	if crds, err = script("--crds"); err != nil {
		return "", "", err
	}
	return bin, crds, nil
}

// startAgentSandbox applies the CRDs of dir and starts the controller bin
// against kubeconfig, logging to logPath; stop undoes both.
func startAgentSandbox(ctx context.Context, kc client.Client, bin, dir, kubeconfig, logPath string) (*agentSandbox, error) {
	a := &agentSandbox{kc: kc, log: logPath}
	if err := a.applyCRDs(ctx, dir); err != nil {
		a.deleteCRDs()
		return nil, err
	}
	if err := a.startController(ctx, bin, kubeconfig); err != nil {
		a.deleteCRDs()
		return nil, err
	}
	return a, nil
}

func (a *agentSandbox) applyCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	for _, f := range files {
		crd, err := readCRD(f)
		if err != nil {
			return err
		}
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g != asbGroup && g != asbExtGroup {
			return fmt.Errorf("%s: group %q is not agent-sandbox's", f, g)
		}
		crd.SetLabels(map[string]string{asbBenchLabel: "agent-sandbox"})
		old := &unstructured.Unstructured{}
		old.SetGroupVersionKind(asbCRDGVK)
		if err := a.kc.Get(ctx, client.ObjectKey{Name: crd.GetName()}, old); err == nil {
			if old.GetLabels()[asbBenchLabel] == "" {
				return fmt.Errorf("CRD %s is already installed, not by the benchmark: leaving agent-sandbox out", crd.GetName())
			}
			crd.SetResourceVersion(old.GetResourceVersion()) // a run interrupted before its cleanup
			if err := a.kc.Update(ctx, crd); err != nil {
				return err
			}
		} else if err := a.kc.Create(ctx, crd); err != nil {
			return err
		}
		a.crds = append(a.crds, crd.GetName())
	}
	return waitFor(ctx, time.Minute, "agent-sandbox CRDs established", func() bool {
		for _, name := range a.crds {
			if !a.crdEstablished(ctx, name) {
				return false
			}
		}
		return true
	})
}

func readCRD(path string) (*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&u.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if u.GroupVersionKind() != asbCRDGVK {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition", path)
	}
	return u, nil
}

func (a *agentSandbox) crdEstablished(ctx context.Context, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(asbCRDGVK)
	if a.kc.Get(ctx, client.ObjectKey{Name: name}, u) != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	return conditionTrue(conds, "Established")
}

// conditionTrue says whether conds (a status.conditions list) has typ True.
func conditionTrue(conds []any, typ string) bool {
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// asbControllerArgs: the extensions controllers on (the SandboxClaim path
// needs them), one process so no leader election, and its metrics and
// health endpoints on loopback ports no one else holds (its defaults,
// :8080 and :8081, are on every address).
func asbControllerArgs(metricsAddr, healthAddr string) []string {
	return []string{
		"--extensions",
		"--leader-elect=false",
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + healthAddr,
	}
}

func (a *agentSandbox) startController(ctx context.Context, bin, kubeconfig string) error {
	mp, err := freePort()
	if err != nil {
		return err
	}
	hp, err := freePort()
	if err != nil {
		return err
	}
	kubeconfig, err = filepath.Abs(kubeconfig)
	if err != nil {
		return err
	}
	logf, err := os.Create(a.log)
	if err != nil {
		return err
	}
	a.cmd = exec.Command(bin, asbControllerArgs(mp, hp)...) // not ctx: stop ends it
	a.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	if err := a.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	a.done = make(chan error, 1)
	go func() { a.done <- a.cmd.Wait(); logf.Close() }()
	ready := "http://" + hp + "/readyz"
	var exited error
	err = waitFor(ctx, 30*time.Second, "agent-sandbox controller ready", func() bool {
		select {
		case exited = <-a.done:
			a.done <- exited
			return true
		default:
		}
		r, err := http.Get(ready)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	if exited == nil && err == nil {
		return nil
	}
	a.stopController()
	return fmt.Errorf("agent-sandbox controller did not start (%v %v); its log: %s", exited, err, a.log)
}

func (a *agentSandbox) stopController() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
	a.cmd = nil
}

// stop ends the controller and deletes the CRDs (their objects go with
// them). The caller deletes the objects first, while the controller still
// runs: it removes any finalizer its objects carry.
func (a *agentSandbox) stop() error {
	a.stopController()
	return a.deleteCRDs()
}

func (a *agentSandbox) deleteCRDs() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, name := range a.crds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(asbCRDGVK)
		u.SetName(name)
		if err := client.IgnoreNotFound(a.kc.Delete(ctx, u)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return waitFor(ctx, 90*time.Second, "agent-sandbox CRDs deleted", func() bool {
		for _, name := range a.crds {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(asbCRDGVK)
			if !apierrors.IsNotFound(a.kc.Get(ctx, client.ObjectKey{Name: name}, u)) {
				return false
			}
		}
		return true
	})
}
