package k8s_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/kube"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// previewBridge is one bridge "process": its own backend (informer cache)
// and server (memory), with previews on, as `sandpod bridge
// --preview-listen` wires them.
type previewBridge struct {
	api     pb.SandboxServiceClient
	backend *kube.Backend
	preview string // the preview listener's base URL
	stop    func()
}

// previewKey is the key of the Secret every replica mounts.
var previewKey = []byte("0123456789abcdef0123456789abcdef")

func startPreviewBridge(t *testing.T, ns string) *previewBridge {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	backend, err := kube.New(ctx, env.Config, kube.Options{Namespaces: []string{ns}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := bridge.New(backend)
	if err := srv.EnablePreviews(bridge.PreviewOptions{URLTemplate: "http://*.preview.localhost:50053", Key: previewKey}); err != nil {
		t.Fatal(err)
	}
	g, _ := srv.GRPCServer(bridge.Options{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	hs := httptest.NewServer(srv.PreviewHandler(bridge.Options{}))
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	b := &previewBridge{api: pb.NewSandboxServiceClient(conn), backend: backend, preview: hs.URL, stop: func() {
		once.Do(func() { _ = conn.Close(); hs.Close(); g.Stop(); srv.Close(); cancel() })
	}}
	t.Cleanup(b.stop)
	return b
}

// expose records an exposure as ExposePort does once the port answered:
// kwok's pods have no network, so the wait for the port cannot succeed
// here (the node bed's TestBridgePreview* cover it end to end).
func (b *previewBridge) expose(t *testing.T, ns, name string, port int32, id string) {
	t.Helper()
	err := b.backend.UpdateExposures(callCtx(t), ns, name, func(_ string, cur []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error) {
		return append(cur, v1alpha1.ExposedPort{ID: id, Port: port, Protocol: "http", Created: metav1.Now()}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ports lists the exposed ports through the bridge's API.
func (b *previewBridge) ports(t *testing.T, ns, name string) []string {
	t.Helper()
	resp, err := b.api.ListExposedPorts(callCtx(t), &pb.ListExposedPortsRequest{Namespace: ns, Sandbox: name})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range resp.GetPorts() {
		urls = append(urls, p.GetUrl())
	}
	return urls
}

// lookup asks the preview listener for a preview host with a signature
// that does not match: 403 when it found the exposure (the signature is
// checked against it before anything else), 404 when it did not.
func (b *previewBridge) lookup(t *testing.T, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.preview+"/?"+bridge.SigParam+"=9999999999.AAAA", nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusForbidden && !strings.Contains(string(body), "does not match") {
		t.Fatalf("403 for another reason: %s", body)
	}
	return resp.StatusCode
}

func wantPorts(t *testing.T, b *previewBridge, ns, name string, want ...string) {
	t.Helper()
	harness.Eventually(t, harness.Timeout, "exposed ports "+strings.Join(want, ","), func() (bool, string) {
		got := b.ports(t, ns, name)
		return strings.Join(got, ",") == strings.Join(want, ","), strings.Join(got, ",")
	})
}

// TestBridgePreviewsOutliveRestartsAndReplicas: exposures live on the
// Sandbox (AnnotationExposedPorts), so a new bridge process lists and
// finds them, any replica serves any preview, and a suspend closes them in
// the patch that suspends.
func TestBridgePreviewsOutliveRestartsAndReplicas(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeSandbox(ns, "web"))
	waitSandbox(t, ns, "web", "running", phaseIs(v1alpha1.SandboxRunning))

	first := startPreviewBridge(t, ns)
	const id = "abcdefghijklmnop"
	first.expose(t, ns, "web", 8000, id)
	url := "http://p8000-" + id + ".preview.localhost:50053/"
	wantPorts(t, first, ns, "web", url)
	_, err := first.api.ExposePort(callCtx(t), &pb.ExposePortRequest{Namespace: ns, Sandbox: "web", Port: 8000})
	wantCode(t, err, codes.AlreadyExists, "exposing an exposed port")
	if !strings.Contains(err.Error(), url) {
		t.Errorf("ALREADY_EXISTS does not name the URL: %v", err)
	}
	sb := &v1alpha1.Sandbox{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, sb); err != nil {
		t.Fatal(err)
	}
	if got := v1alpha1.ParseExposedPorts(sb.Annotations[v1alpha1.AnnotationExposedPorts]); len(got) != 1 || got[0].ID != id || got[0].Port != 8000 {
		t.Fatalf("annotation = %q", sb.Annotations[v1alpha1.AnnotationExposedPorts])
	}

	// A restart: the old process is gone, two new replicas start.
	first.stop()
	a, b := startPreviewBridge(t, ns), startPreviewBridge(t, ns)
	for name, r := range map[string]*previewBridge{"a": a, "b": b} {
		wantPorts(t, r, ns, "web", url)
		if code := r.lookup(t, "p8000-"+id+".preview.localhost:50053"); code != http.StatusForbidden {
			t.Errorf("replica %s: preview lookup = %d, want 403 (found, signature checked)", name, code)
		}
		if code := r.lookup(t, "p8001-"+id+".preview.localhost"); code != http.StatusNotFound {
			t.Errorf("replica %s: another port's host = %d, want 404", name, code)
		}
		if code := r.lookup(t, "p8000-zzzzzzzzzzzzzzzz.preview.localhost"); code != http.StatusNotFound {
			t.Errorf("replica %s: unknown id = %d, want 404", name, code)
		}
	}

	// Two replicas expose two ports at once: both writes land (the one
	// that conflicts is computed again).
	var wg sync.WaitGroup
	for i, r := range []*previewBridge{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.expose(t, ns, "web", int32(9000+i), []string{"qqqqqqqqqqqqqqqq", "rrrrrrrrrrrrrrrr"}[i])
		}()
	}
	wg.Wait()
	wantPorts(t, a, ns, "web", url, "http://p9000-qqqqqqqqqqqqqqqq.preview.localhost:50053/", "http://p9001-rrrrrrrrrrrrrrrr.preview.localhost:50053/")

	// Unexpose on one replica: the other's URL dies too.
	if _, err := a.api.UnexposePort(callCtx(t), &pb.UnexposePortRequest{Namespace: ns, Sandbox: "web", Port: 8000}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, harness.Timeout, "replica b forgets the unexposed port", func() (bool, string) {
		code := b.lookup(t, "p8000-"+id+".preview.localhost")
		return code == http.StatusNotFound, http.StatusText(code)
	})
	_, err = b.api.UnexposePort(callCtx(t), &pb.UnexposePortRequest{Namespace: ns, Sandbox: "web", Port: 8000})
	wantCode(t, err, codes.NotFound, "unexposing it again")

	// A suspend clears the list in the patch that suspends.
	if _, err := b.api.SuspendSandbox(callCtx(t), &pb.SuspendSandboxRequest{Namespace: ns, Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, sb); err != nil {
		t.Fatal(err)
	}
	if v, ok := sb.Annotations[v1alpha1.AnnotationExposedPorts]; ok || sb.Spec.OperatingMode != v1alpha1.OperatingModeSuspended {
		t.Fatalf("after suspend: mode %s, annotation %q", sb.Spec.OperatingMode, v)
	}
	harness.Eventually(t, harness.Timeout, "replica a forgets the suspended sandbox's previews", func() (bool, string) {
		code := a.lookup(t, "p9000-qqqqqqqqqqqqqqqq.preview.localhost")
		return code == http.StatusNotFound, http.StatusText(code)
	})
	wantPorts(t, a, ns, "web")
	// Adding to a suspended sandbox is refused, whatever the replica's cache says.
	err = a.backend.UpdateExposures(callCtx(t), ns, "web", func(_ string, cur []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error) {
		return append(cur, v1alpha1.ExposedPort{ID: "ssssssssssssssss", Port: 8080, Protocol: "http"}), nil
	})
	wantCode(t, err, codes.FailedPrecondition, "exposing on a suspended sandbox")
}
