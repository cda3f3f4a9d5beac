package k8s_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/httpapi"
	"github.com/sandpod/sandpod/bridge/kube"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// startHTTPBridge is startBridge's HTTP/JSON face: the bridge's Kubernetes
// backend behind the in-process gRPC connection and the gateway, as
// `sandpod bridge --http-listen` wires them.
func startHTTPBridge(t *testing.T, ns string, auth ...bridge.Authenticator) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	backend, err := kube.New(ctx, env.Config, kube.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	srv := bridge.New(backend)
	conn, stop, err := srv.InProcess(bridge.Options{Authenticators: auth})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(ctx, conn, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api)
	t.Cleanup(func() { hs.Close(); stop(); srv.Close() })
	return hs.URL
}

// TestBridgeHTTPKubernetesTokens: over HTTP, a service account's token is
// checked by TokenReview and RBAC exactly as over gRPC, and a warm claim
// on the Kubernetes backend works: the Authorization header reaches the
// gRPC interceptors.
func TestBridgeHTTPKubernetesTokens(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	tmpl := makeTemplate(ns, "py")
	tmpl.Spec.Lifecycle.IdleTimeout = nil
	create(t, tmpl, makePool(ns, "pool", "py", 1))
	waitPoolReady(t, ns, "pool", 1, "")
	reviewer, err := kube.NewTokenReviewer(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	base := startHTTPBridge(t, ns, reviewer)
	ctx := callCtx(t)

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bob"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sandbox-user"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"sandpod.dev"}, Resources: []string{"sandboxclaims"}, Verbs: []string{"create"},
	}}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bob"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sandbox-user"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bob", Namespace: ns}},
	}
	create(t, sa, role, binding)
	tr, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "bob", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	do := func(method, path, token string, body any) (int, map[string]any) {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, r)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: HTTP %d, body not JSON: %v", method, path, resp.StatusCode, err)
		}
		return resp.StatusCode, out
	}
	errStatus := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		s, _ := e["status"].(string)
		return s
	}

	if code, out := do("GET", "/v1/namespaces/"+ns+"/templates", tr.Status.Token, nil); code != 200 {
		t.Errorf("bob in his namespace: HTTP %d %v", code, out)
	}
	if code, out := do("GET", "/v1/namespaces/kube-system/templates", tr.Status.Token, nil); code != 403 || errStatus(out) != "PERMISSION_DENIED" {
		t.Errorf("bob where RBAC does not let him claim: HTTP %d %v, want 403 PERMISSION_DENIED", code, out)
	}
	if code, out := do("GET", "/v1/namespaces/"+ns+"/templates", "not-a-token", nil); code != 401 || errStatus(out) != "UNAUTHENTICATED" {
		t.Errorf("an unknown token: HTTP %d %v, want 401", code, out)
	}
	if code, out := do("GET", "/v1/namespaces/"+ns+"/templates", "", nil); code != 401 {
		t.Errorf("no token: HTTP %d %v, want 401", code, out)
	}

	code, out := do("POST", "/v1/namespaces/"+ns+"/sandboxes:claim", tr.Status.Token, map[string]any{"template": "py"})
	if code != 200 || out["warm"] != true {
		t.Fatalf("warm claim over HTTP: HTTP %d %v", code, out)
	}
	name, _ := out["sandbox"].(map[string]any)["name"].(string)
	if code, out := do("GET", "/v1/namespaces/"+ns+"/sandboxes/"+name, tr.Status.Token, nil); code != 200 {
		t.Errorf("get %s: HTTP %d %v", name, code, out)
	}
	if code, out := do("DELETE", "/v1/namespaces/"+ns+"/sandboxes/"+name, tr.Status.Token, nil); code != 200 {
		t.Errorf("delete %s: HTTP %d %v", name, code, out)
	}
	if code, out := do("GET", "/v1/namespaces/"+ns+"/sandboxes/no-such", tr.Status.Token, nil); code != 404 {
		t.Errorf("get a missing sandbox: HTTP %d %v, want 404", code, out)
	}
}
