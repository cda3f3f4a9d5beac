// The controller keeps the bridge CA of the agents of Kubernetes sandboxes
// (certs.go): one Secret, sandpod-agent-ca, in the controller's own
// namespace, made by the first controller that finds none. Sandbox pods get
// only the pin of its public key.

// Package kubeca is the Kubernetes side of the agents' CA (part of agent
// reachability, core/agentconn): the controller keeps it in a Secret
// (EnsureCA), the bridge reads it and reviews agents' tokens (BridgeCA,
// ReviewAgentToken). It is apart so that the agent, which needs only
// core/agentconn, is built without a Kubernetes client.
package kubeca

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// How long EnsureCA looks for the Secret of a controller that won the create.
const (
	winnerReads = 50
	winnerWait  = 200 * time.Millisecond
)

// The controller's RBAC for this is a Role in its own namespace, written
// by hand (deploy/base/rbac.yaml, the chart's controller.yaml), not a
// kubebuilder marker: a marker's namespace is fixed, the chart's is not.

// EnsureCA returns the pin of the bridge CA in namespace ns and its public key
// (PublicKey, which agents seal their identity tokens to), making
// the CA Secret when there is none. Two controllers starting at once both
// try to create it; the loser reads the winner's. The Secret is immutable:
// a new CA means deleting it and restarting the controller and the bridge
// (the controller then replaces the pods whose agents trust the old one).
func EnsureCA(ctx context.Context, c client.Client, ns string, clk clock.Clock) (pin, key string, err error) {
	cert, err := ensureCert(ctx, c, ns, clk)
	if err != nil {
		return "", "", err
	}
	return agentconn.Pin(cert), agentconn.PublicKey(cert), nil
}

func ensureCert(ctx context.Context, c client.Client, ns string, clk clock.Clock) (*x509.Certificate, error) {
	key := client.ObjectKey{Namespace: ns, Name: agentconn.CASecretName}
	sec := &corev1.Secret{}
	err := c.Get(ctx, key, sec)
	if apierrors.IsNotFound(err) {
		ca, caErr := agentconn.NewCA(clk.Now())
		if caErr != nil {
			return nil, caErr
		}
		certPEM, keyPEM, caErr := ca.PEM()
		if caErr != nil {
			return nil, caErr
		}
		immutable := true
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns, Labels: map[string]string{v1alpha1.LabelAppName: v1alpha1.AppName}},
			Type:       corev1.SecretTypeOpaque,
			Immutable:  &immutable,
			Data:       map[string][]byte{agentconn.SecretKeyCACert: certPEM, agentconn.SecretKeyCAKey: keyPEM},
		}
		err = c.Create(ctx, sec)
		if err == nil {
			return ca.Cert, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create the agent agentconn.CA Secret %s/%s: %w", ns, key.Name, err)
		}
		// Another controller won: read its CA. Should the read miss it
		// (the winner's create and this read raced, or it was deleted at
		// once), look again for a while rather than fail the start.
		sec = &corev1.Secret{}
		for try := 0; ; try++ {
			err = c.Get(ctx, key, sec)
			if !apierrors.IsNotFound(err) || try >= winnerReads {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(winnerWait):
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the agent agentconn.CA Secret %s/%s: %w", ns, key.Name, err)
	}
	ca, err := agentconn.ParseCA(sec.Data[agentconn.SecretKeyCACert], sec.Data[agentconn.SecretKeyCAKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w (delete it to make a new agentconn.CA)", ns, key.Name, err)
	}
	return ca.Cert, nil
}
