package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// bridgePods selects the bridge's pods.
const bridgePods = "app.kubernetes.io/name=sandpod,app.kubernetes.io/component=bridge"

// TestBridgePreviewSurvivesBridgeRestart: a preview URL and its signed URL
// keep working through a restart of the bridge (its pod deleted and made
// again by its Deployment), under runc and gVisor. The exposures live on
// the Sandbox (annotation sandpod.dev/exposed-ports) and the signing key in
// the Secret sandpod-bridge-preview-key, not in the bridge process.
//
// Not parallel: it restarts the bridge every other test talks to, so it
// runs before the parallel tests start.
func TestBridgePreviewSurvivesBridgeRestart(t *testing.T) {
	env := Setup(t)
	ns := env.Namespace(t)
	ctx := Context(t)
	c := env.bridgeClient(t, ns)
	src, err := os.ReadFile("../integration/testdata/preview_server.py")
	if err != nil {
		t.Fatal(err)
	}
	type served struct {
		runtime string
		sb      *sandpod.Sandbox
		ex      *sandpod.ExposedPort
	}
	var all []served
	for _, runtime := range []string{"runc", GVisor} {
		tmpl := Template(ns, "web-"+runtime, PythonImage)
		if runtime == GVisor {
			rc := GVisor
			tmpl.Spec.RuntimeClassName = &rc
		}
		env.Apply(t, tmpl)
	}
	for _, runtime := range []string{"runc", GVisor} {
		var sb *sandpod.Sandbox
		// The bridge reads templates from its informer cache, which may
		// not show one applied a moment ago: TEMPLATE_NOT_FOUND then.
		env.Eventually(t, "claim web-"+runtime, func() (bool, string) {
			var err error
			sb, err = c.Claim(ctx, "web-"+runtime)
			if errors.Is(err, sandpod.ErrNotFound) {
				return false, err.Error()
			}
			if err != nil {
				t.Fatal(err)
			}
			return true, ""
		})
		if _, err := sb.Files().WriteFile(ctx, "preview_server.py", src); err != nil {
			t.Fatal(err)
		}
		if res, err := sb.Run(ctx, "setsid python3 preview_server.py http 8080 >app.log 2>&1 </dev/null &"); err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: start the server: %+v %v", runtime, res, err)
		}
		ex, err := sb.ExposePort(ctx, 8080)
		if err != nil {
			t.Fatalf("%s: %v", runtime, err)
		}
		all = append(all, served{runtime, sb, ex})
	}

	previewAddr := env.ServiceAddr(t, bridgeNamespace, bridgeService, "preview")
	var d net.Dialer
	hc := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, previewAddr)
		}, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	token := env.BridgeToken(t)
	// fetch answers the status of GET u (0 when the bridge is not there).
	fetch := func(u string, auth bool) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	check := func(when string) {
		t.Helper()
		for _, s := range all {
			env.Eventually(t, s.runtime+": GET through the preview URL "+when, func() (bool, string) {
				code, body := fetch(s.ex.URL, true)
				return code == 200 && body == "hello from the sandbox\n", body
			})
			if code, body := fetch(s.ex.SignedURL, false); code != http.StatusFound {
				t.Errorf("%s: signed URL %s: %d %q, want 302", s.runtime, when, code, body)
			}
			ports, err := s.sb.ExposedPorts(ctx)
			if err != nil || len(ports) != 1 || ports[0].URL != s.ex.URL {
				t.Errorf("%s: exposed ports %s: %+v %v", s.runtime, when, ports, err)
			}
		}
	}
	check("before the restart")
	for _, s := range all {
		sb := &v1alpha1.Sandbox{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.sb.Name()}, sb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sb.Annotations[v1alpha1.AnnotationExposedPorts], `"port":8080`) {
			t.Errorf("%s: annotation %q", s.runtime, sb.Annotations[v1alpha1.AnnotationExposedPorts])
		}
	}

	// Restart the bridge: delete its pods, wait for others to be ready.
	pods, err := env.Clientset.CoreV1().Pods(bridgeNamespace).List(ctx, metav1.ListOptions{LabelSelector: bridgePods})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("bridge pods: %v %v", pods, err)
	}
	old := map[string]bool{}
	for _, p := range pods.Items {
		old[p.Name] = true
		if err := env.Clientset.CoreV1().Pods(bridgeNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env.Eventually(t, "a new bridge pod ready, the old ones gone", func() (bool, string) {
		pods, err := env.Clientset.CoreV1().Pods(bridgeNamespace).List(ctx, metav1.ListOptions{LabelSelector: bridgePods})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range pods.Items {
			if old[p.Name] {
				return false, "old pod " + p.Name + " still there"
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == "Ready" && cond.Status == "True" {
					ready++
				}
			}
		}
		return ready > 0, "no new bridge pod ready yet"
	})
	check("after the restart")

	// Still closed by a suspend through the new bridge.
	if err := all[0].sb.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := fetch(all[0].ex.URL, true); code != http.StatusNotFound {
		t.Errorf("after suspend: %d %q, want 404", code, body)
	}
}
