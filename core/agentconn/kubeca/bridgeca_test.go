package kubeca

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// A bridge that starts before the controller made the CA answers
// UNAVAILABLE AGENT_CA_NOT_READY, reads again only after a back-off, and
// once the CA is there gives each sandbox incarnation one TLS config named
// after its UID.
func TestAgentCAReadsWithBackOff(t *testing.T) {
	reads := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return cl.Get(ctx, key, obj, opts...)
		},
	}).Build()
	now := time.Now()
	a := NewBridgeCA("sandpod-system", func() time.Time { return now }, nil)
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "sb", UID: "0b8f6c1e-64a2-4c53-9f3e-5d7a2e9c1b44"}}
	ctx := context.Background()

	_, err := a.Config(ctx, c, sb)
	if status.Code(err) != codes.Unavailable || errinfo.Reason(err) != errinfo.ReasonAgentCANotReady {
		t.Fatalf("no agentconn.CA yet: %v, want UNAVAILABLE %s", err, errinfo.ReasonAgentCANotReady)
	}
	if _, err := a.Config(ctx, c, sb); err == nil || reads != 1 {
		t.Fatalf("read again within the back-off: %d reads, %v", reads, err)
	}

	ca, _ := agentconn.NewCA(now)
	certPEM, keyPEM, _ := ca.PEM()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sandpod-system", Name: agentconn.CASecretName},
		Data: map[string][]byte{agentconn.SecretKeyCACert: certPEM, agentconn.SecretKeyCAKey: keyPEM}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(caRetryMin + time.Millisecond)
	cfg, err := a.Config(ctx, c, sb)
	if err != nil || reads != 2 {
		t.Fatalf("after the back-off: %d reads, %v", reads, err)
	}
	if cfg.ServerName != agentconn.Identity(string(sb.UID)) {
		t.Errorf("ServerName %q, want the sandbox's identity", cfg.ServerName)
	}
	if again, _ := a.Config(ctx, c, sb); again != cfg || reads != 2 {
		t.Errorf("the same incarnation got another config or read the agentconn.CA again (%d reads)", reads)
	}
	cert, err := cfg.GetClientCertificate(nil)
	if err != nil || len(cert.Certificate) != 2 {
		t.Fatalf("client certificate: %v, chain of %d", err, len(cert.Certificate))
	}
	a.Forget(sb.UID)
	if fresh, _ := a.Config(ctx, c, sb); fresh == cfg {
		t.Error("a forgotten sandbox kept its config")
	}
}
