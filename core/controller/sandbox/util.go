package sandbox

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func isOwnedBy(refs []metav1.OwnerReference, sb *v1alpha1.Sandbox) bool {
	for _, ref := range refs {
		if ref.Kind == "Sandbox" && ref.UID == sb.UID {
			return true
		}
	}
	return false
}

func ownedBySandboxNamed(refs []metav1.OwnerReference, name string) bool {
	for _, ref := range refs {
		if ref.Kind == "Sandbox" && ref.Name == name && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		if obj, ok := it.(client.Object); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// eventQueue holds the events of a pass until its status write succeeded.
type eventQueue []queuedEvent

type queuedEvent struct {
	obj                  runtime.Object
	kind, reason, action string
	note                 string
}

func (q *eventQueue) add(obj runtime.Object, kind, reason, note string) {
	*q = append(*q, queuedEvent{obj: obj, kind: kind, reason: reason, action: reason, note: note})
}

func (q eventQueue) emit(rec events.EventRecorder) {
	if rec == nil {
		return
	}
	for _, e := range q {
		rec.Eventf(e.obj, nil, e.kind, e.reason, e.action, "%s", e.note)
	}
}

// secretMeta is the metadata of a Secret, as the controller caches Secrets.
func secretMeta(ns, name string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// secretMetaList lists Secrets as metadata, as the controller caches them.
func secretMetaList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	return l
}
