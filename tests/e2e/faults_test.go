package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// killPods deletes the pods of a sandpod component at once (grace period
// 0: the processes get SIGKILL, as in a node or process crash).
func (e *Env) killPods(t testing.TB, component string) {
	t.Helper()
	var pods corev1.PodList
	if err := e.Client.List(context.Background(), &pods, client.InNamespace(bridgeNamespace),
		client.MatchingLabels{v1alpha1.LabelAppName: v1alpha1.AppName, v1alpha1.LabelComponent: component}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if err := e.Client.Delete(context.Background(), &pods.Items[i], client.GracePeriodSeconds(0)); err != nil {
			t.Errorf("kill %s: %v", pods.Items[i].Name, err)
		}
	}
}

// TestClaimsSurviveBridgeAndControllerCrash: the bridge and the controller
// are killed in the middle of a burst of claims. Every claim, retried by
// the client with its request id, ends with exactly one sandbox; nothing
// is handed out twice and nothing is left behind.
func TestClaimsSurviveBridgeAndControllerCrash(t *testing.T) {
	// Not parallel: it kills the shared bridge and controller.
	claimsSurvive(t, "crash-claim-", func(env *Env) {
		env.killPods(t, "bridge")
		env.killPods(t, "controller")
	})
}

// TestClaimsSurviveAPIServerRestart: kube-apiserver is killed (SIGKILL) in
// the middle of a burst of claims and started again by the node bed's
// up.sh. The bridge's and the controller's watches resume, and every claim
// ends as in the crash test above.
func TestClaimsSurviveAPIServerRestart(t *testing.T) {
	// Not parallel: every component loses the API server for a while.
	bed := testbedDir(t)
	claimsSurvive(t, "apiserver-claim-", func(*Env) {
		killComponent(t, bed, "apiserver")
		time.Sleep(2 * time.Second) // down for a moment, as in a crash
		up := exec.Command("../../hack/testbed/up.sh")
		up.Env = append(os.Environ(), "SANDPOD_TESTBED_DIR="+bed)
		if out, err := up.CombinedOutput(); err != nil {
			t.Fatalf("restart the API server with up.sh: %v\n%s", err, out)
		}
	})
}

// claimsSurvive claims 8 sandboxes with request ids from a pool of 3,
// disrupts the cluster 300 ms into the burst, and checks that every claim
// (retried by the client, and by the caller with the same id past the
// client's retries) ends with exactly one running sandbox, none shared,
// and that the pool refills.
func claimsSurvive(t *testing.T, idPrefix string, disrupt func(*Env)) {
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 3))
	env.WaitPoolReady(t, ns, "python", 3)
	addr := env.ServiceAddr(t, bridgeNamespace, bridgeService, "grpc")
	c, err := sandpod.Dial(context.Background(), addr, sandpod.WithInsecure(), sandpod.WithToken(env.BridgeToken(t)),
		sandpod.WithNamespace(ns), sandpod.WithRetryPolicy(sandpod.RetryPolicy{MaxElapsedTime: 2 * time.Minute, MaxInterval: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := Context(t)

	const n = 8
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 150 * time.Millisecond)
			id := fmt.Sprintf("%s%d", idPrefix, i)
			sb, err := c.Claim(ctx, "python", sandpod.WithRequestID(id))
			for attempt := 0; err != nil && attempt < 20 && ctx.Err() == nil; attempt++ {
				// Past the client's own retries: the caller retries with the same id.
				time.Sleep(2 * time.Second)
				sb, err = c.Claim(ctx, "python", sandpod.WithRequestID(id))
			}
			if err == nil {
				names[i] = sb.Name()
			}
			errs[i] = err
		})
	}
	time.Sleep(300 * time.Millisecond)
	disrupt(env)
	wg.Wait()

	seen := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("claim %d never succeeded: %v", i, err)
			continue
		}
		seen[names[i]]++
	}
	for name, k := range seen {
		if k > 1 {
			t.Errorf("sandbox %s handed out to %d claims", name, k)
		}
	}
	// Inventory: exactly one claimed sandbox per request id, all running.
	env.Eventually(t, "one running sandbox per claim", func() (bool, string) {
		var list v1alpha1.SandboxList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		byID := map[string][]string{}
		for _, sb := range list.Items {
			if _, pooled := sb.Labels[v1alpha1.LabelPool]; pooled || sb.DeletionTimestamp != nil {
				continue
			}
			id := sb.Annotations[v1alpha1.AnnotationRequestID]
			byID[id] = append(byID[id], sb.Name+"/"+string(sb.Status.Phase))
		}
		ok := len(byID) == n
		for id, sbs := range byID {
			ok = ok && strings.HasPrefix(id, idPrefix) && len(sbs) == 1 && strings.HasSuffix(sbs[0], "/Running")
		}
		return ok, fmt.Sprintf("%v", byID)
	})
	// The pool recovers, and a claimed sandbox still runs code.
	env.WaitPoolReady(t, ns, "python", 3)
	if names[0] != "" {
		sb, err := c.Claim(ctx, "python", sandpod.WithRequestID(idPrefix+"0"))
		if err != nil || sb.Name() != names[0] {
			t.Errorf("a retry of claim 0 after the disruption: %v, %v; want sandbox %s", sb, err, names[0])
		} else if res, err := sb.Run(ctx, "echo ok"); err != nil || string(res.Stdout) != "ok\n" {
			t.Errorf("exec after the disruption: %+v, %v", res, err)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("ran out of time")
	}
}

// testbedDir is the state directory of the hack/testbed cluster under test
// (the kubeconfig is its conf/admin.kubeconfig); tests that restart its
// components skip on another cluster.
func testbedDir(t *testing.T) string {
	t.Helper()
	env := Setup(t)
	dir := filepath.Dir(filepath.Dir(env.Kubeconfig))
	if _, err := os.Stat(filepath.Join(dir, "run", "apiserver.pid")); err != nil {
		t.Skipf("not a hack/testbed cluster (no %s/run/apiserver.pid): cannot restart its API server", dir)
	}
	return dir
}

// killComponent SIGKILLs a node bed component by its pid file.
func killComponent(t *testing.T, bed, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bed, "run", name+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file of %s: %v", name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", name, pid, err)
	}
}

// TestPoolOfBrokenImageDoesNotSpin: a pool whose image is not on the node
// (and may not be pulled) keeps its members pending instead of
// creating and deleting them in a loop, and a claim that must start one
// cold fails at its deadline with the pod's reason in the message.
func TestPoolOfBrokenImageDoesNotSpin(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	// Never pull: the image is missing from the node, and the test must not
	// reach for a registry.
	broken := Template(ns, "broken", "ghcr.io/sandpod/no-such-image:1")
	broken.Spec.PodTemplate.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	env.Apply(t, broken, Pool(ns, "broken", "broken", 2))
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := c.Claim(callCtx, "broken")
	if !errors.Is(err, sandpod.ErrTimeout) || !strings.Contains(err.Error(), "Image") {
		t.Errorf("claim of a template whose image cannot be pulled: %v; want a timeout naming the image pull", err)
	}

	var list v1alpha1.SandboxList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// 2 pool members and the claim's own sandbox; a spinning pool would
	// have made many more by now (generateName gives each a new name).
	if len(list.Items) > 3 {
		var names []string
		for _, sb := range list.Items {
			names = append(names, sb.Name)
		}
		t.Errorf("%d sandboxes after 20s of a broken pool: %v", len(list.Items), names)
	}
}
