package k8s_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/sandpod/sandpod/hack/kube/harness"
)

// TestPriorityAndFairnessKeepsClaimsApart applies the API Priority and
// Fairness objects of deploy/install.yaml and checks how kube-apiserver
// classifies requests (the X-Kubernetes-PF-PriorityLevel-UID header of each
// answer): the bridge's requests and the controller's adoption and
// SandboxClaim status patches in sandpod-claims, the controller's refills
// (creates, sandbox status) in sandpod-refills, its leader election in
// neither.
func TestPriorityAndFairnessKeepsClaimsApart(t *testing.T) {
	harness.Skip(t, env)
	var apf []*unstructured.Unstructured
	for _, u := range installManifest(t) {
		if u.GetAPIVersion() == flowcontrolv1.SchemeGroupVersion.String() {
			apf = append(apf, u)
		}
	}
	serverSideApply(t, env, "flowcontrol-test", apf)
	levels := map[string]string{} // UID -> name
	for _, name := range []string{"sandpod-claims", "sandpod-refills"} {
		pl := &flowcontrolv1.PriorityLevelConfiguration{}
		if err := env.Get(pl, "", name); err != nil {
			t.Fatal(err)
		}
		levels[string(pl.UID)] = name
	}

	const sa = "system:serviceaccount:sandpod-system:"
	cases := []struct {
		user, method, path, want string
	}{
		{sa + "sandpod-bridge", http.MethodPatch, "/apis/sandpod.dev/v1alpha1/namespaces/x/sandboxes/y", "sandpod-claims"},
		{sa + "sandpod-bridge", http.MethodGet, "/api/v1/namespaces/x/secrets/y", "sandpod-claims"},
		{sa + "sandpod-controller", http.MethodPatch, "/apis/sandpod.dev/v1alpha1/namespaces/x/sandboxes/y", "sandpod-claims"},
		{sa + "sandpod-controller", http.MethodPatch, "/apis/sandpod.dev/v1alpha1/namespaces/x/sandboxclaims/y/status", "sandpod-claims"},
		{sa + "sandpod-controller", http.MethodPatch, "/apis/sandpod.dev/v1alpha1/namespaces/x/sandboxes/y/status", "sandpod-refills"},
		{sa + "sandpod-controller", http.MethodPost, "/apis/sandpod.dev/v1alpha1/namespaces/x/sandboxes", "sandpod-refills"},
		{sa + "sandpod-controller", http.MethodPost, "/api/v1/namespaces/x/pods", "sandpod-refills"},
		{sa + "sandpod-controller", http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/x/leases/y", ""},
		{sa + "someone-else", http.MethodPatch, "/apis/sandpod.dev/v1alpha1/namespaces/x/sandboxes/y", ""},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s %s as %s", tc.method, tc.path, strings.TrimPrefix(tc.user, sa))
		// The API server picks up new objects within seconds.
		harness.Eventually(t, harness.Timeout, name+" in "+tc.want, func() (bool, string) {
			got, err := priorityLevelOf(tc.user, tc.method, tc.path)
			if err != nil {
				return false, err.Error()
			}
			return levels[got] == tc.want, fmt.Sprintf("priority level %q (%s)", levels[got], got)
		})
	}
}

// priorityLevelOf sends one request as user (impersonated: the API server
// classifies the impersonated user) and returns the UID of the priority
// level it was put in. The request itself may well be refused: the level
// is chosen before authorization.
func priorityLevelOf(user, method, path string) (string, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:sandpod-system", "system:authenticated"}}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, method, cfg.Host+path, strings.NewReader("{}"))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"), nil
}
