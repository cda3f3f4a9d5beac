package k8s_test

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/agentconn/kubeca"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// Controllers starting at once make one CA between them: the losers of the
// create read the winner's, and every one gives its agents the same pin.
// The Secret is immutable, and a restart keeps it.
func TestAgentCAIsMadeOnce(t *testing.T) {
	harness.Skip(t, env)
	ns := env.Namespace(t)
	pins := make([]string, 4)
	errs := make([]error, len(pins))
	var wg sync.WaitGroup
	for i := range pins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pins[i], _, errs[i] = kubeca.EnsureCA(ctx, env.Client, ns, clock.RealClock{})
		}()
	}
	wg.Wait()
	for i := range pins {
		if errs[i] != nil || pins[i] != pins[0] || !agentconn.ValidPin(pins[i]) {
			t.Fatalf("starts at once: pins %v, errors %v; want one pin", pins, errs)
		}
	}
	sec := &corev1.Secret{}
	if err := env.Get(sec, ns, agentconn.CASecretName); err != nil {
		t.Fatal(err)
	}
	ca, err := agentconn.ParseCA(sec.Data[agentconn.SecretKeyCACert], sec.Data[agentconn.SecretKeyCAKey])
	if err != nil || agentconn.Pin(ca.Cert) != pins[0] || sec.Immutable == nil || !*sec.Immutable {
		t.Fatalf("the CA Secret: %v, pin %s, immutable %v", err, pins[0], sec.Immutable)
	}
	again, _, err := kubeca.EnsureCA(ctx, env.Client, ns, clock.RealClock{})
	if err != nil || again != pins[0] {
		t.Errorf("a restart: pin %s (%v), want %s", again, err, pins[0])
	}
}
