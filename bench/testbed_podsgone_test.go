package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The wait for the namespace's pods follows the watch: a deleted pod goes,
// a new one (a refill of a pool an earlier phase left) is waited for, and
// an error event makes the caller list again.
func TestApplyPodEvent(t *testing.T) {
	now := metav1.Now()
	pod := func(name string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	cases := map[string]struct {
		left   map[string]string
		ev     watch.Event
		goOn   bool
		remain string
	}{
		"the last pod deleted": {
			map[string]string{"a": "a"}, watch.Event{Type: watch.Deleted, Object: pod("a", corev1.PodRunning, true)}, true, "",
		},
		"a pod going away is still waited for": {
			map[string]string{"a": "a"}, watch.Event{Type: watch.Modified, Object: pod("a", corev1.PodRunning, true)}, true,
			"a (Running, deleting: true)",
		},
		"a new pod is waited for": {
			map[string]string{}, watch.Event{Type: watch.Added, Object: pod("refill", corev1.PodPending, false)}, true,
			"refill (Pending, deleting: false)",
		},
		"an error ends the watch": {
			map[string]string{"a": "a (Running, deleting: false)"}, watch.Event{Type: watch.Error, Object: &metav1.Status{}}, false,
			"a (Running, deleting: false)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := applyPodEvent(tc.left, tc.ev); got != tc.goOn {
				t.Errorf("go on %v, want %v", got, tc.goOn)
			}
			if got := podsLeft(tc.left); got != tc.remain {
				t.Errorf("left %q, want %q", got, tc.remain)
			}
		})
	}
}
