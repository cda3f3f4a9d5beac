package kube

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/readyourwrites/rywtest"
)

// A template applied a moment ago, which the bridge's cache does not hold
// yet, is read from the API server; one that does not exist anywhere is
// TEMPLATE_NOT_FOUND.
func TestTemplateReadPastALaggingCache(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "fresh"}}
	server := fake.NewClientBuilder().WithScheme(s).WithObjects(tmpl).Build()
	cache := fake.NewClientBuilder().WithScheme(s).Build() // before the apply reached it
	b := &Backend{client: rywtest.Lagging{Client: server, Cache: cache}, live: server}

	got, err := b.template(context.Background(), "team", "fresh")
	if err != nil || got.Name != "fresh" {
		t.Fatalf("template applied a moment ago: %v, %v", got, err)
	}
	_, err = b.template(context.Background(), "team", "absent")
	if errinfo.Reason(err) != errinfo.ReasonTemplateNotFound {
		t.Fatalf("absent template: %v, want reason %s", err, errinfo.ReasonTemplateNotFound)
	}
}
