package lowmem

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/controller/sandbox"
)

// fullPod is a sandbox pod as the API server returns it.
func fullPod() *corev1.Pod {
	truth := true
	now := metav1.Now()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "sb", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels:          map[string]string{"sandpod.dev/sandbox": "sb"},
			Annotations:     map[string]string{"big": "annotation"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Sandbox", Name: "sb", UID: "s1", Controller: &truth}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "main", Image: "python"}}},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r", LastProbeTime: now, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "main", Ready: true, Image: "python", ImageID: "sha256:x", RestartCount: 2,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", ContainerID: "x"}},
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		},
	}
}

func TestTrimPod(t *testing.T) {
	waiting := fullPod()
	waiting.Status.Phase, waiting.Status.Conditions = corev1.PodPending, nil
	waiting.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name:  "sandpod-install",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "long"}},
	}}
	failed := fullPod()
	failed.Status.Phase, failed.Status.Reason, failed.Status.Message = corev1.PodFailed, "Evicted", "low on memory"
	deleting := fullPod()
	deleting.DeletionTimestamp = &metav1.Time{}

	cases := map[string]*corev1.Pod{"ready": fullPod(), "waiting": waiting, "failed": failed, "deleting": deleting}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			got := TrimPod(pod)
			// What the sandbox reconciler reads is unchanged.
			if sandbox.WorkloadOf(got) != sandbox.WorkloadOf(pod) {
				t.Errorf("workload %v, want %v", sandbox.WorkloadOf(got), sandbox.WorkloadOf(pod))
			}
			if got.Name != pod.Name || got.Namespace != pod.Namespace || got.UID != pod.UID ||
				!equality.Semantic.DeepEqual(got.Labels, pod.Labels) ||
				!equality.Semantic.DeepEqual(got.OwnerReferences, pod.OwnerReferences) ||
				!equality.Semantic.DeepEqual(got.DeletionTimestamp, pod.DeletionTimestamp) ||
				!equality.Semantic.DeepEqual(got.Status.PodIPs, pod.Status.PodIPs) ||
				got.Status.Phase != pod.Status.Phase || got.Status.Reason != pod.Status.Reason ||
				got.Status.Message != pod.Status.Message {
				t.Errorf("identity or status lost: %+v", got)
			}
			for i, cs := range pod.Status.InitContainerStatuses {
				if w := cs.State.Waiting; w != nil && got.Status.InitContainerStatuses[i].State.Waiting.Reason != w.Reason {
					t.Errorf("waiting reason lost: %+v", got.Status.InitContainerStatuses[i])
				}
			}
			// What it never reads is gone: of the conditions, all but
			// Ready's status.
			if len(got.Status.Conditions) > 1 || (len(pod.Status.Conditions) > 0 &&
				!equality.Semantic.DeepEqual(got.Status.Conditions, []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}})) {
				t.Errorf("conditions kept: %+v", got.Status.Conditions)
			}
			if got.ManagedFields != nil || got.Annotations != nil || !equality.Semantic.DeepEqual(got.Spec, corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}) {
				t.Errorf("kept more than needed: %+v", got)
			}
			for _, cs := range got.Status.ContainerStatuses {
				if cs.RestartCount != 2 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 137 {
					t.Errorf("the agent's restarts and last exit are lost (the sandbox reports them): %+v", cs)
				}
				if cs.Image != "" || cs.State.Running != nil {
					t.Errorf("container status kept more than needed: %+v", cs)
				}
			}
		})
	}
}

func TestTrimPodTransform(t *testing.T) {
	out, err := PodTransform(fullPod())
	if err != nil || out.(*corev1.Pod).Spec.NodeName != "" {
		t.Errorf("pods are not trimmed: %v %+v", err, out)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	out, err = PodTransform(sec)
	if err != nil || out.(*corev1.Secret).ManagedFields != nil {
		t.Errorf("other objects keep managedFields: %v %+v", err, out)
	}
}

func TestCachedForm(t *testing.T) {
	if got, ok := CachedForm(fullPod()).(*corev1.Pod); !ok || got.Spec.NodeName != "" {
		t.Errorf("pod not trimmed: %+v", got)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"agent": []byte("key")}}
	if got := CachedForm(sec); got != nil {
		t.Errorf("secrets are not cached, got %+v", got)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	if got := CachedForm(svc); got.GetManagedFields() != nil || svc.ManagedFields == nil {
		t.Errorf("managedFields not stripped from a copy: %+v (argument %+v)", got, svc)
	}
}

func TestTrimPodSharesTheContainerNames(t *testing.T) {
	a, b := TrimPod(fullPod()), TrimPod(fullPod())
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] {
		t.Errorf("two pods of one template keep a container each")
	}
	other := fullPod()
	other.Spec.Containers[0].Name = "other"
	if got := TrimPod(other).Spec.Containers[0].Name; got != "other" {
		t.Errorf("container name %q, want other", got)
	}
	// A sidecar's name is kept: the agent may run in any container.
	sidecar := fullPod()
	sidecar.Spec.Containers = append(sidecar.Spec.Containers, corev1.Container{Name: "sidecar", Image: "x"})
	got := TrimPod(sidecar).Spec.Containers
	if len(got) != 2 || got[1].Name != "sidecar" || got[1].Image != "" {
		t.Errorf("containers %+v, want main and sidecar by name only", got)
	}
}
