package k8s_test

import (
	"context"
	"fmt"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/agentconn/kubeca"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// TestAgentIdentityTokenReview: what the bridge's TokenReview of an agent's
// identity token says with a real kube-apiserver. A token bound to a
// sandbox's pod object for the agents' audience (the TokenRequest the
// kubelet makes for the pod's projected volume; kwok runs no kubelet, so
// the test makes it) reviews as a service account of the sandbox's
// namespace with the pod's name and UID; it proves that pod and no other,
// and the API server takes it for nothing of its own. A token for the API
// server's audience is no agent identity.
func TestAgentIdentityTokenReview(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeSandbox(ns, "sb1"))
	waitSandbox(t, ns, "sb1", "running", phaseIs(v1alpha1.SandboxRunning))
	pod := &corev1.Pod{}
	if err := env.Get(pod, ns, "sb1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	if _, err := env.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	token := func(aud string) string {
		secs := int64(v1alpha1.AgentIdentityTokenSeconds)
		tr, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			Audiences: []string{aud}, ExpirationSeconds: &secs,
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	review := kubeca.ReviewAgentToken(env.Client)
	agentToken := token(v1alpha1.AgentTokenAudience)
	r, err := review(ctx, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("review: %+v", r)
	want := agentconn.Expect{Identity: "sb-x", Namespace: ns, PodName: "sb1", PodUID: string(pod.UID)}
	if err := agentconn.CheckReview(r, v1alpha1.AgentTokenAudience, want); err != nil {
		t.Errorf("the sandbox pod's own token: %v", err)
	}
	for name, other := range map[string]agentconn.Expect{
		"another pod of the namespace":           {Identity: "sb-x", Namespace: ns, PodName: "sb2"},
		"the same pod name in another namespace": {Identity: "sb-x", Namespace: ns + "-other", PodName: "sb1"},
		"another UID (a replaced pod)":           {Identity: "sb-x", Namespace: ns, PodName: "sb1", PodUID: "00000000-0000-0000-0000-000000000000"},
	} {
		if err := agentconn.CheckReview(r, v1alpha1.AgentTokenAudience, other); err == nil {
			t.Errorf("the token proves %s", name)
		}
	}
	// A token of the same pod for the API server's own audience: not an
	// agent identity (the review for the agents' audience refuses it).
	apiToken, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := review(ctx, apiToken.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentconn.CheckReview(r2, v1alpha1.AgentTokenAudience, want); err == nil {
		t.Errorf("a token for the API server's audience proves the agent: %+v", r2)
	}
	// The pod deleted: its bound token is refused.
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// (The controller makes a new pod of the same name: another UID.)
	harness.Eventually(t, harness.Timeout, "the deleted pod's token refused", func() (bool, string) {
		r3, err := review(ctx, agentToken)
		return err == nil && !r3.Authenticated, fmt.Sprintf("%+v %v", r3, err)
	})
}
