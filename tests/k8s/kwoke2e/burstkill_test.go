package kwoke2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
	"github.com/sandpod/sandpod/tests/testserver"
)

// The crash tests of the node bed (tests/e2e/faults_test.go: 8 claims from a
// pool of 3) at the speed the kwok bench claims at: bursts of 500
// ClaimSandbox calls through the real `sandpod bridge` binary into a pool of
// 500 kept by the real `sandpod controller` binary, each a process of its
// own, killed with SIGKILL in the middle of a burst.
const (
	burstClaims  = 500
	burstCallers = 32
	// The kill comes once this many calls have been answered: the burst is
	// well under way, whatever the machine's speed.
	killAfter = burstClaims / 5
	// burstWait bounds a burst, its retries and the pool's refill; it
	// asserts nothing about speed (a loaded 2-core machine takes about a
	// minute for what takes seconds on a quiet one).
	burstWait = 5 * time.Minute
)

// TestClaimBurstsSurviveKills: mid-burst, (1) the bridge and the controller
// are killed with SIGKILL and started again, then, once the pool has
// refilled, (2) kube-apiserver is. Every call is retried with its request
// id, as the clients do, until it succeeds. Then: every request id got a
// sandbox, no sandbox went to two ids (nothing handed out twice), the
// namespace holds exactly one claimed sandbox per id and no other claimed
// sandbox (nothing lost or leaked by a claim the crash interrupted), the
// pool is back to exactly its size, and every pod belongs to a live
// sandbox.
func TestClaimBurstsSurviveKills(t *testing.T) {
	if os.Getenv(harness.EnvBin) == "" {
		t.Skip(harness.SkipMessage)
	}
	env, err := harness.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	bin := testserver.Binary(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	ctrlProc := startProc(t, "controller", bin, "controller", "--kubeconfig", env.Kubeconfig,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:0",
		"--runtime-class-policy", "none", "--agent-image", "example.com/sandpod:e2e")
	defer ctrlProc.stop()
	// A fixed port, so the restarted bridge is where the callers' one
	// connection reconnects to.
	bridgeAddr := harness.FreeAddr(t)
	bridgeProc := startProc(t, "bridge", bin, "bridge", "--kubeconfig", env.Kubeconfig, "--namespaces", ns, "--listen", bridgeAddr)
	defer bridgeProc.stop()

	tmpl := &v1alpha1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "py"},
		Spec: v1alpha1.SandboxTemplateSpec{PodTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "python:3.13-slim"}},
		}}},
	}
	pool := &v1alpha1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
		Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: "py"}, Replicas: burstClaims},
	}
	for _, obj := range []client.Object{tmpl, pool} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitPoolExactlyFull(t, env, ns)

	conn, err := grpc.NewClient(bridgeAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := pb.NewSandboxServiceClient(conn)

	answers := map[string]string{} // request id -> sandbox, over both bursts
	burst(ctx, t, api, ns, "kill-procs-", answers, func() {
		bridgeProc.kill(t)
		ctrlProc.kill(t)
		ctrlProc.start(t)
		bridgeProc.start(t)
	})
	checkInventory(t, env, ns, answers)
	waitPoolExactlyFull(t, env, ns)

	burst(ctx, t, api, ns, "kill-apiserver-", answers, func() {
		if err := env.RestartAPIServer(ctx, 2*time.Second); err != nil {
			t.Fatalf("restart kube-apiserver: %v", err)
		}
	})
	checkInventory(t, env, ns, answers)
	waitPoolExactlyFull(t, env, ns)

	// A retry of a request id answered before the crashes still finds its
	// sandbox.
	res, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, RequestId: "kill-procs-0"})
	if err != nil || res.GetSandbox().GetName() != answers["kill-procs-0"] {
		t.Errorf("a retry of kill-procs-0: %v, %v; want sandbox %s", res.GetSandbox().GetName(), err, answers["kill-procs-0"])
	}
}

// burst sends burstClaims ClaimSandbox calls with request ids prefix0...
// from burstCallers callers, each retried with its id until it succeeds,
// runs disrupt once killAfter calls have been answered, and records each
// id's sandbox in answers. A sandbox answered to two ids fails the test.
func burst(ctx context.Context, t *testing.T, api pb.SandboxServiceClient, ns, prefix string, answers map[string]string, disrupt func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, burstWait)
	defer cancel()
	ids := make(chan string, burstClaims)
	for i := range burstClaims {
		ids <- fmt.Sprintf("%s%d", prefix, i)
	}
	close(ids)
	var (
		mu       sync.Mutex
		got      = map[string]string{}
		failed   []string
		answered atomic.Int64
		retries  atomic.Int64
		kill     = make(chan struct{})
		killOnce sync.Once
	)
	var wg sync.WaitGroup
	for range burstCallers {
		wg.Go(func() {
			for id := range ids {
				var last error
				for ctx.Err() == nil {
					callCtx, cancelCall := context.WithTimeout(ctx, 30*time.Second)
					res, err := api.ClaimSandbox(callCtx, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns, RequestId: id}, grpc.WaitForReady(true))
					cancelCall()
					if err == nil {
						mu.Lock()
						got[id] = res.GetSandbox().GetName()
						mu.Unlock()
						if answered.Add(1) == killAfter {
							killOnce.Do(func() { close(kill) })
						}
						last = nil
						break
					}
					last = err
					retries.Add(1)
					time.Sleep(200 * time.Millisecond)
				}
				if last != nil || ctx.Err() != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s: %v", id, last))
					mu.Unlock()
				}
			}
		})
	}
	select {
	case <-kill:
		disrupt()
	case <-ctx.Done():
	}
	wg.Wait()
	t.Logf("burst %s: %d calls answered, %d retries", prefix, answered.Load(), retries.Load())
	if len(failed) > 0 {
		sort.Strings(failed)
		t.Fatalf("%d calls never succeeded within %s, e.g. %s", len(failed), burstWait, strings.Join(failed[:min(5, len(failed))], "; "))
	}
	holder := map[string]string{}
	for id, name := range answers {
		holder[name] = id
	}
	for id, name := range got {
		if other, ok := holder[name]; ok {
			t.Errorf("sandbox %s handed out to %s and %s", name, other, id)
		}
		holder[name], answers[id] = id, name
	}
}

// checkInventory: the namespace's claimed sandboxes (not pool members) are
// exactly one per request id answered, the one answered, each Running; and
// every pod belongs to a live sandbox.
func checkInventory(t *testing.T, env *harness.Env, ns string, answers map[string]string) {
	t.Helper()
	harness.Eventually(t, burstWait, "one running claimed sandbox per request id, no other", func() (bool, string) {
		var list v1alpha1.SandboxList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		byID := map[string][]string{}
		notRunning := 0
		for _, sb := range list.Items {
			if _, pooled := sb.Labels[v1alpha1.LabelPool]; pooled || sb.DeletionTimestamp != nil {
				continue
			}
			id := sb.Annotations[v1alpha1.AnnotationRequestID]
			byID[id] = append(byID[id], sb.Name)
			if sb.Status.Phase != v1alpha1.SandboxRunning {
				notRunning++
			}
		}
		var bad []string
		for id, names := range byID {
			if len(names) != 1 || answers[id] != names[0] {
				bad = append(bad, fmt.Sprintf("%s: %v (answered %q)", id, names, answers[id]))
			}
		}
		sort.Strings(bad)
		return len(byID) == len(answers) && len(bad) == 0 && notRunning == 0,
			fmt.Sprintf("%d request ids among claimed sandboxes, %d answered, %d not running; wrong: %v", len(byID), len(answers), notRunning, bad[:min(5, len(bad))])
	})
	harness.Eventually(t, burstWait, "every pod's sandbox alive", func() (bool, string) {
		var pods corev1.PodList
		var sbs v1alpha1.SandboxList
		if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		if err := env.Client.List(context.Background(), &sbs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		live := map[string]bool{}
		for _, sb := range sbs.Items {
			live[sb.Name] = sb.DeletionTimestamp == nil
		}
		var orphans []string
		for _, p := range pods.Items {
			if !live[p.Name] {
				orphans = append(orphans, p.Name)
			}
		}
		return len(orphans) == 0, fmt.Sprintf("%d pods without a live sandbox: %v", len(orphans), orphans[:min(5, len(orphans))])
	})
}

// waitPoolExactlyFull waits until the pool has exactly burstClaims members,
// all Running: a crash must not leave it short or over.
func waitPoolExactlyFull(t *testing.T, env *harness.Env, ns string) {
	t.Helper()
	harness.Eventually(t, burstWait, "the pool exactly full", func() (bool, string) {
		var list v1alpha1.SandboxList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPool: "pool"}); err != nil {
			return false, err.Error()
		}
		members, running := 0, 0
		for _, sb := range list.Items {
			if _, claimed := sb.Labels[v1alpha1.LabelClaim]; claimed || sb.DeletionTimestamp != nil {
				continue
			}
			members++
			if sb.Status.Phase == v1alpha1.SandboxRunning {
				running++
			}
		}
		return members == burstClaims && running == burstClaims, fmt.Sprintf("%d members, %d running", members, running)
	})
}

// proc is a sandpod binary run as its own process, to be killed and
// started again with the same arguments.
type proc struct {
	name string
	args []string
	bin  string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, bin: bin, args: args, log: filepath.Join(t.TempDir(), name+".log")}
	p.start(t)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			lines := strings.Split(string(b), "\n")
			t.Logf("%s log (tail):\n%s", p.name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return p
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	p.done = done
	go func() { _ = p.cmd.Wait(); close(done) }()
}

// kill is kill -9: no shutdown, no last writes.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.done
}

func (p *proc) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
