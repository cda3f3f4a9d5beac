package main

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// An agent-sandbox claim is Ready with its Ready condition; it is warm when
// it holds a sandbox not named after it (a cold one is).
func TestASBClaimState(t *testing.T) {
	claim := func(ready string, sandbox string) *unstructured.Unstructured {
		u := asbObject(asbExtGroup, "SandboxClaim", "ns", "c1", map[string]any{})
		status := map[string]any{}
		if ready != "" {
			status["conditions"] = []any{
				map[string]any{"type": "Other", "status": "True"},
				map[string]any{"type": "Ready", "status": ready},
			}
		}
		if sandbox != "" {
			status["sandbox"] = map[string]any{"name": sandbox}
		}
		u.Object["status"] = status
		return u
	}
	for _, tc := range []struct {
		name           string
		u              *unstructured.Unstructured
		ready, warm    bool
		wantSandboxFor string
	}{
		{"new", claim("", ""), false, false, ""},
		{"cold, not ready", claim("False", "c1"), false, false, "c1"},
		{"cold, ready", claim("True", "c1"), true, false, "c1"},
		{"adopted", claim("True", "pool-x7k2p"), true, true, "pool-x7k2p"},
	} {
		ready, cs := asbClaimState(tc.u)
		if ready != tc.ready || cs.warm != tc.warm || cs.sandbox != tc.wantSandboxFor {
			t.Errorf("%s: ready %t warm %t sandbox %q; want %t %t %q", tc.name, ready, cs.warm, cs.sandbox, tc.ready, tc.warm, tc.wantSandboxFor)
		}
	}
}

// A pool of 0 says so: agent-sandbox's SandboxWarmPool defaults replicas
// to 1, and a cold claim needs an empty pool.
func TestASBPoolOfZeroWritesReplicas(t *testing.T) {
	u := asbPool("ns", "p", "t", 0)
	n, found, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if err != nil || !found || n != 0 {
		t.Errorf("replicas = %d, found %t, %v; want 0 written", n, found, err)
	}
	if u.GetAPIVersion() != "extensions.agents.x-k8s.io/v1beta1" || u.GetKind() != "SandboxWarmPool" {
		t.Errorf("pool is %s %s", u.GetAPIVersion(), u.GetKind())
	}
}

// The first Ready a watch sees is the claim's time; later events keep it
// and update the rest.
func TestClaimWatchKeepsFirstReady(t *testing.T) {
	w := &claimWatch{seen: map[string]claimSeen{}}
	ch := make(chan watch.Event, 3)
	u := func(ready, sandbox string) *unstructured.Unstructured {
		x := asbObject(asbExtGroup, "SandboxClaim", "ns", "c", map[string]any{})
		x.Object["status"] = map[string]any{
			"conditions": []any{map[string]any{"type": "Ready", "status": ready}},
			"sandbox":    map[string]any{"name": sandbox},
		}
		return x
	}
	ch <- watch.Event{Type: watch.Added, Object: u("False", "")}
	ch <- watch.Event{Type: watch.Modified, Object: u("True", "p-1")}
	ch <- watch.Event{Type: watch.Modified, Object: u("True", "p-1")}
	close(ch)
	read := func(obj any) (string, bool, claimSeen) {
		ready, cs := asbClaimState(obj.(*unstructured.Unstructured))
		return "x/c", ready, cs
	}
	before := time.Now()
	w.follow(t.Context(), watch.NewProxyWatcher(ch), read)
	cs := w.seen["x/c"]
	if cs.ready.IsZero() || cs.ready.Before(before) || !cs.warm || cs.sandbox != "p-1" {
		t.Fatalf("seen = %+v", cs)
	}
	first := cs.ready
	ch2 := make(chan watch.Event, 1)
	ch2 <- watch.Event{Type: watch.Modified, Object: u("True", "p-1")}
	close(ch2)
	w.follow(t.Context(), watch.NewProxyWatcher(ch2), read)
	if got := w.seen["x/c"].ready; !got.Equal(first) {
		t.Errorf("a later Ready event moved the time from %v to %v", first, got)
	}
}

// A warm claim waits for exactly the pools' pods, all Ready, none going
// away.
func TestPodsSettled(t *testing.T) {
	pod := func(ready bool, deleting bool) corev1.Pod {
		p := corev1.Pod{}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: st}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		n    int
		want bool
	}{
		{"full", []corev1.Pod{pod(true, false), pod(true, false)}, 2, true},
		{"one short (refill not started)", []corev1.Pod{pod(true, false)}, 2, false},
		{"one starting", []corev1.Pod{pod(true, false), pod(false, false)}, 2, false},
		{"claimed pod still going", []corev1.Pod{pod(true, false), pod(true, false), pod(true, true)}, 2, false},
		{"full but one going away", []corev1.Pod{pod(true, false), pod(true, true)}, 2, false},
		{"none wanted, none there", nil, 0, true},
	} {
		if got := podsSettled(tc.pods, tc.n); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
}

// The two products alternate which claims first.
func TestCmpOrderAlternates(t *testing.T) {
	if a, b := cmpOrder(0), cmpOrder(1); a == b || !slices.Contains(a[:], 0) || !slices.Contains(a[:], 1) || a[0] != b[1] {
		t.Errorf("orders %v %v", a, b)
	}
}

// The controller runs alone (no leader election), with the extensions on,
// off its default ports (:8080 and :8081 on every address).
func TestASBControllerArgs(t *testing.T) {
	got := asbControllerArgs("127.0.0.1:1", "127.0.0.1:2")
	for _, want := range []string{"--extensions", "--leader-elect=false", "--metrics-bind-address=127.0.0.1:1", "--health-probe-bind-address=127.0.0.1:2"} {
		if !slices.Contains(got, want) {
			t.Errorf("args %v lack %s", got, want)
		}
	}
}
