package preview

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestParsePreviewHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		port int32
		id   string
		ok   bool
	}{
		{"p8080-abcdef234567.preview.localhost:50053", 8080, "abcdef234567", true},
		{"P8080-ABC.preview.example.com", 8080, "abc", true},
		{"p1-a", 1, "a", true},
		{"p65535-a.x", 65535, "a", true},
		{"p65536-a.x", 0, "", false},
		{"p0-a.x", 0, "", false},
		{"p080-a.x", 0, "", false}, // one spelling per port
		{"p8080-.x", 0, "", false},
		{"p8080-ab1.x", 0, "", false}, // not base32
		{"p8080-" + strings.Repeat("a", 33) + ".x", 0, "", false},
		{"x8080-a.x", 0, "", false},
		{"localhost:50053", 0, "", false},
		{"[::1]:50053", 0, "", false},
		{"", 0, "", false},
	} {
		port, id, ok := parsePreviewHost(tc.host)
		if port != tc.port || id != tc.id || ok != tc.ok {
			t.Errorf("parsePreviewHost(%q) = %d %q %v, want %d %q %v", tc.host, port, id, ok, tc.port, tc.id, tc.ok)
		}
	}
	id := newExposureID()
	if p, got, ok := parsePreviewHost(previewLabel(3000, id) + ".preview.localhost"); !ok || p != 3000 || got != id {
		t.Errorf("a new label does not parse back: %s", previewLabel(3000, id))
	}
}

func TestVerifyPreview(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	e := &exposure{ID: "abc", Namespace: "default", Sandbox: "sb", UID: "u1", Port: 8080}
	now := time.Unix(1_800_000_000, 0)
	sig := signPreview(key, e, now.Add(time.Hour))
	unix, mac, _ := strings.Cut(sig, ".")
	other := *e
	other.Port = 8081
	reused := *e
	reused.UID = "u2"
	for _, tc := range []struct {
		name string
		key  []byte
		e    *exposure
		sig  string
		now  time.Time
		want error
	}{
		{"valid", key, e, sig, now, nil},
		{"expired", key, e, sig, now.Add(time.Hour), errSigExpired},
		{"expiry edited", key, e, fmt.Sprint(now.Add(48*time.Hour).Unix()) + "." + mac, now, errSigBad},
		{"mac edited", key, e, unix + "." + strings.Repeat("A", len(mac)), now, errSigBad},
		{"another port", key, &other, sig, now, errSigBad},
		{"a new sandbox of the same name", key, &reused, sig, now, errSigBad},
		{"another key", []byte(strings.Repeat("q", 32)), e, sig, now, errSigBad},
		{"no dot", key, e, unix + mac, now, errSigMalformed},
		{"bad base64", key, e, unix + ".!!", now, errSigMalformed},
		{"bad time", key, e, "x." + mac, now, errSigMalformed},
		{"empty", key, e, "", now, errSigMalformed},
		{"huge", key, e, unix + "." + strings.Repeat("A", 1000), now, errSigMalformed},
	} {
		_, err := verifyPreview(tc.key, tc.e, tc.sig, tc.now)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestCheckPreviewPort(t *testing.T) {
	for _, tc := range []struct {
		port int32
		ok   bool
	}{{1, true}, {8080, true}, {65535, true}, {0, false}, {-1, false}, {65536, false}, {7070, false}, {7071, false}} {
		err := checkPreviewPort(tc.port)
		if (err == nil) != tc.ok || (err != nil && status.Code(err) != codes.InvalidArgument) {
			t.Errorf("port %d: %v", tc.port, err)
		}
	}
}

func TestPortCheckRetry(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		resp  *http.Response
		err   error
		retry bool
	}{
		{"200 is an answer", live, &http.Response{StatusCode: 200}, nil, false},
		{"500 is an answer too", live, &http.Response{StatusCode: 500}, nil, false},
		{"connection refused: not yet", live, nil, fmt.Errorf("dial: %w", errPortClosed), true},
		{"another failure ends the wait", live, nil, errors.New("agent unreachable"), false},
		{"the deadline ends it", gone, nil, fmt.Errorf("dial: %w", errPortClosed), false},
	} {
		retry, _ := portCheckRetry(tc.ctx, tc.resp, tc.err)
		if retry != tc.retry {
			t.Errorf("%s: retry = %v", tc.name, retry)
		}
	}
}

// A suspend through the bridge refuses new exposures until a resume, even
// while the backend still reports the sandbox running (Kubernetes).
func TestSuspendingRefusesExposures(t *testing.T) {
	p := newPreviews()
	if err := p.checkNew(context.Background(), "default", "sb", "u1", 8080); err != nil {
		t.Fatal(err)
	}
	p.suspending("", "sb", true)
	if err := p.checkNew(context.Background(), "default", "sb", "u1", 8080); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("while suspending: %v, want FAILED_PRECONDITION", err)
	}
	if err := p.checkNew(context.Background(), "default", "other", "u2", 8080); err != nil {
		t.Fatalf("another sandbox: %v", err)
	}
	p.suspending("default", "sb", false)
	if err := p.checkNew(context.Background(), "default", "sb", "u1", 8080); err != nil {
		t.Fatalf("after resume: %v", err)
	}
}

// checkNewList answers as checkNewLocked does, on a list kept by the
// backend (Kubernetes).
func TestCheckNewStoredList(t *testing.T) {
	p := newPreviews()
	p.opts.URLTemplate = "http://*.preview.localhost:1"
	one := []v1alpha1.ExposedPort{{ID: "aaaa", Port: 8000, Protocol: "http"}}
	full := make([]v1alpha1.ExposedPort, MaxExposedPorts)
	for i := range full {
		full[i] = v1alpha1.ExposedPort{ID: "x", Port: int32(100 + i), Protocol: "http"}
	}
	for _, tc := range []struct {
		name     string
		curUID   string
		list     []v1alpha1.ExposedPort
		port     int32
		want     codes.Code
		inResult string
	}{
		{"new port", "u1", one, 8001, codes.OK, ""},
		{"taken port names its URL", "u1", one, 8000, codes.AlreadyExists, "http://p8000-aaaa.preview.localhost:1/"},
		{"at the limit", "u1", full, 8000, codes.ResourceExhausted, "32 ports"},
		{"replaced sandbox", "u2", nil, 8000, codes.FailedPrecondition, "created again"},
	} {
		err := p.checkNewList("default", "sb", "u1", tc.curUID, tc.list, tc.port)
		if status.Code(err) != tc.want || !strings.Contains(status.Convert(err).Message(), tc.inResult) {
			t.Errorf("%s: %v, want %s containing %q", tc.name, err, tc.want, tc.inResult)
		}
	}
}
