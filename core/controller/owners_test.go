package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestControllerRequest(t *testing.T) {
	yes, no := true, false
	ref := func(apiVersion, kind, name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, Controller: controller}
	}
	sandbox := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "sb"}}
	cases := map[string]struct {
		refs []metav1.OwnerReference
		want reconcile.Request
		ok   bool
	}{
		"no owner":                          {nil, reconcile.Request{}, false},
		"controlled by the sandbox":         {[]metav1.OwnerReference{ref("sandpod.dev/v1alpha1", "Sandbox", "sb", &yes)}, sandbox, true},
		"another version of the group":      {[]metav1.OwnerReference{ref("sandpod.dev/v1", "Sandbox", "sb", &yes)}, sandbox, true},
		"owner but not controller":          {[]metav1.OwnerReference{ref("sandpod.dev/v1alpha1", "Sandbox", "sb", &no)}, reconcile.Request{}, false},
		"controller flag unset":             {[]metav1.OwnerReference{ref("sandpod.dev/v1alpha1", "Sandbox", "sb", nil)}, reconcile.Request{}, false},
		"another group's Sandbox":           {[]metav1.OwnerReference{ref("agents.x-k8s.io/v1alpha1", "Sandbox", "sb", &yes)}, reconcile.Request{}, false},
		"another kind of sandpod":           {[]metav1.OwnerReference{ref("sandpod.dev/v1alpha1", "SandboxWarmPool", "p", &yes)}, reconcile.Request{}, false},
		"the controller ref, not the first": {[]metav1.OwnerReference{ref("v1", "ConfigMap", "cm", &no), ref("sandpod.dev/v1alpha1", "Sandbox", "sb", &yes)}, sandbox, true},
		"only the first controller ref counts": {[]metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "rs", &yes), ref("sandpod.dev/v1alpha1", "Sandbox", "sb", &yes)},
			reconcile.Request{}, false},
		"unparsable apiVersion": {[]metav1.OwnerReference{ref("a/b/c", "Sandbox", "sb", &yes)}, reconcile.Request{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", OwnerReferences: tc.refs}}
			got, ok := controllerRequest(pod, "Sandbox")
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
