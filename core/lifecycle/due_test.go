package lifecycle

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestDecideDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	idle := func(d Deadlines) Deadlines {
		d.IdleApplies, d.LastActivity, d.IdleTimeout = true, t0.Add(-10*time.Minute), 5*time.Minute
		return d
	}
	retain := v1alpha1.ShutdownPolicyRetain
	cases := map[string]struct {
		in   Deadlines
		want Due
	}{
		"nothing set":                    {Deadlines{}, Due{}},
		"shutdown ahead: wait for it":    {Deadlines{Shutdown: at(time.Hour)}, Due{Wait: time.Hour}},
		"shutdown due: delete":           {Deadlines{Shutdown: at(-time.Second)}, Due{Expiry: ExpiryDelete}},
		"shutdown due, retain":           {Deadlines{Shutdown: at(0), Policy: retain}, Due{Expiry: ExpiryRetain}},
		"lease due: delete, the lease's": {Deadlines{Lease: at(-time.Second)}, Due{Expiry: ExpiryDelete, Lease: true}},
		"lease due, retain":              {Deadlines{Lease: at(0), Policy: retain}, Due{Expiry: ExpiryRetain, Lease: true}},
		"shutdown before the lease": {Deadlines{Shutdown: at(-time.Second), Lease: at(-time.Minute)},
			Due{Expiry: ExpiryDelete}},
		"shutdown due, lease ahead: still waits for the lease": {Deadlines{Shutdown: at(-time.Second), Policy: retain, Lease: at(time.Minute)},
			Due{Expiry: ExpiryRetain, Wait: time.Minute}},
		"lease due, shutdown ahead: the lease, still waits for the shutdown": {Deadlines{Shutdown: at(time.Hour), Lease: at(-time.Second)},
			Due{Expiry: ExpiryDelete, Lease: true, Wait: time.Hour}},
		"both ahead: the nearer": {Deadlines{Shutdown: at(time.Hour), Lease: at(time.Minute)}, Due{Wait: time.Minute}},
		"idle due: suspend":      {idle(Deadlines{}), Due{Idle: v1alpha1.IdleSuspend}},
		"idle due: pause": {idle(Deadlines{IdleAction: v1alpha1.IdlePause}),
			Due{Idle: v1alpha1.IdlePause}},
		"idle due but not applicable": {Deadlines{LastActivity: t0.Add(-time.Hour), IdleTimeout: time.Minute}, Due{}},
		"idle, shutdown due: expiry wins": {idle(Deadlines{Shutdown: at(0)}),
			Due{Expiry: ExpiryDelete}},
		"idle, lease due: lease wins": {idle(Deadlines{Lease: at(0)}),
			Due{Expiry: ExpiryDelete, Lease: true}},
		"idle due, shutdown ahead: suspend, wait for the shutdown": {idle(Deadlines{Shutdown: at(time.Hour)}),
			Due{Idle: v1alpha1.IdleSuspend, Wait: time.Hour}},
		"idle ahead: the nearest wait": {Deadlines{IdleApplies: true, LastActivity: t0, IdleTimeout: time.Minute, Shutdown: at(time.Hour)},
			Due{Wait: time.Minute}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := DecideDue(t0, tc.in); got != tc.want {
				t.Errorf("DecideDue = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSandboxDeadlines(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	exp := t0.Add(time.Minute)
	mk := func(f func(*v1alpha1.Sandbox)) *v1alpha1.Sandbox {
		sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
		if f != nil {
			f(sb)
		}
		return sb
	}
	cases := map[string]struct {
		sb   *v1alpha1.Sandbox
		want Deadlines
	}{
		"nothing set": {mk(nil), Deadlines{Policy: v1alpha1.ShutdownPolicyDelete, LastActivity: t0}},
		"shutdown, retain, idle": {mk(func(sb *v1alpha1.Sandbox) {
			sb.Spec.Lifecycle.ShutdownTime = &metav1.Time{Time: exp}
			sb.Spec.Lifecycle.ShutdownPolicy = v1alpha1.ShutdownPolicyRetain
			sb.Spec.Lifecycle.IdleTimeout = &metav1.Duration{Duration: time.Hour}
			sb.Spec.Lifecycle.IdleAction = v1alpha1.IdlePause
		}), Deadlines{Shutdown: &exp, Policy: v1alpha1.ShutdownPolicyRetain, LastActivity: t0, IdleTimeout: time.Hour, IdleAction: v1alpha1.IdlePause}},
		"a lease": {mk(func(sb *v1alpha1.Sandbox) {
			sb.Annotations = map[string]string{v1alpha1.AnnotationLease: "30s", v1alpha1.AnnotationLeaseExpires: exp.Format(time.RFC3339Nano)}
		}), Deadlines{Policy: v1alpha1.ShutdownPolicyDelete, Lease: &exp, LastActivity: t0}},
		"an expiry left without its lease: none": {mk(func(sb *v1alpha1.Sandbox) {
			sb.Annotations = map[string]string{v1alpha1.AnnotationLeaseExpires: exp.Format(time.RFC3339Nano)}
		}), Deadlines{Policy: v1alpha1.ShutdownPolicyDelete, LastActivity: t0}},
		"an unreadable expiry: none": {mk(func(sb *v1alpha1.Sandbox) {
			sb.Annotations = map[string]string{v1alpha1.AnnotationLease: "30s", v1alpha1.AnnotationLeaseExpires: "soon"}
		}), Deadlines{Policy: v1alpha1.ShutdownPolicyDelete, LastActivity: t0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SandboxDeadlines(tc.sb); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SandboxDeadlines = %+v, want %+v", got, tc.want)
			}
		})
	}
}
