package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	restclient "k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sandpod/sandpod/core/controller"
)

// Namespace creates a fresh namespace (with its default ServiceAccount, which
// the ServiceAccount admission plugin wants and no controller-manager makes
// here) and deletes it when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ns := "t-" + rand.String(8)
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if err := e.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	return ns
}

// ManagerOptions configure a test manager.
type ManagerOptions struct {
	controller.Options
	// MetricsAddr serves metrics there ("" disables them).
	MetricsAddr string
	// Impersonate runs the manager as this user (its RBAC is the test's to
	// grant) instead of the kwok bed's admin.
	Impersonate string
}

// StartManager runs sandpod's manager in-process, watching only the given
// namespaces (so tests with different controller-wide options do not
// overlap), until the test ends.
func (e *Env) StartManager(t testing.TB, o ManagerOptions, namespaces ...string) {
	t.Helper()
	t.Cleanup(e.StartStoppableManager(t, o, namespaces...))
}

// StartStoppableManager is StartManager whose manager runs until the
// returned stop is called (a benchmark stops it before it measures).
func (e *Env) StartStoppableManager(t testing.TB, o ManagerOptions, namespaces ...string) (stop func()) {
	t.Helper()
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	co := controller.CacheOptions()
	co.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range namespaces {
		co.DefaultNamespaces[ns] = cache.Config{}
	}
	metricsAddr := o.MetricsAddr
	if metricsAddr == "" {
		metricsAddr = "0"
	}
	skip := true
	cfg := restCopy(e)
	cfg.Impersonate.UserName = o.Impersonate
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  co,
		Client:                 controller.ClientOptions(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := controller.Setup(ctx, mgr, o.Options); err != nil {
		cancel()
		t.Fatalf("setup: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Logf("manager did not stop within 30s")
		}
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 60*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		stop()
		t.Fatalf("manager cache did not sync")
	}
	return stop
}

// FreeAddr is a free loopback host:port.
func FreeAddr(t testing.TB) string {
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// Eventually polls cond every 100ms until it returns true or timeout passes,
// then fails the test with the last message cond gave.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var msg string
	for {
		ok, m := cond()
		if ok {
			return
		}
		msg = m
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Timeout is the generous wait of every Eventually in the suite: it must hold
// on a loaded 2-core machine, and it asserts nothing about speed.
const Timeout = 60 * time.Second

// Get reads obj fresh from the API server.
func (e *Env) Get(obj client.Object, ns, name string) error {
	return e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

func restCopy(e *Env) *restclient.Config { c := *e.Config; return &c }
