package harness

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// bindLoop stands in for kube-scheduler: it binds every unscheduled pod to
// the kwok node (through the pods/binding subresource, as the scheduler
// does). kwok then drives the pod's status.
func (e *Env) bindLoop(ctx context.Context) {
	for ctx.Err() == nil {
		e.bindOnce(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *Env) bindOnce(ctx context.Context) {
	pods := e.Clientset.CoreV1().Pods("")
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		return
	}
	for i := range list.Items {
		e.bind(ctx, &list.Items[i])
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=", ResourceVersion: list.ResourceVersion})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added && ev.Type != watch.Modified {
			continue
		}
		if pod, ok := ev.Object.(*corev1.Pod); ok {
			e.bind(ctx, pod)
		}
	}
}

func (e *Env) bind(ctx context.Context, pod *corev1.Pod) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	_ = e.Clientset.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: NodeName},
	}, metav1.CreateOptions{})
}
