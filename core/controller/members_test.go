package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

func eventMember(name, rv string, phase v1alpha1.SandboxPhase) *v1alpha1.Sandbox {
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: rv, UID: types.UID("u-" + name),
		CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0)),
		Labels:            map[string]string{v1alpha1.LabelPool: "p", v1alpha1.LabelTemplate: "py", v1alpha1.LabelTemplateHash: "h"},
	}}
	sb.Status.Phase = phase
	return sb
}

// The claim reconciler's view of the pool follows the informer's events:
// a member that becomes ready is offered, one taken (by this process: its
// write is held until the event shows it) or deleted (a tombstone too) is
// not.
func TestMemberEvents(t *testing.T) {
	members, written := adopt.NewIndex(), readyourwrites.NewObserved[*v1alpha1.Sandbox](0)
	on := eachObject(memberSeen(members, written)) // as watchMembers' handler
	pick := func() string {
		sb, ok := members.Pick("ns", "py", "", "h", nil)
		if !ok {
			return ""
		}
		return sb.Name
	}
	steps := []struct {
		name    string
		event   func()
		want    string
		written bool // a's take still held
	}{
		{"a pending member is not offered", func() { on(eventMember("a", "1", v1alpha1.SandboxPending), false) }, "", false},
		{"ready, it is", func() { on(eventMember("a", "2", v1alpha1.SandboxRunning), false) }, "a", false},
		{"taken by this process: held until the event", func() {
			took := eventMember("a", "3", v1alpha1.SandboxRunning)
			took.Labels[v1alpha1.LabelClaim] = "c"
			written.Put(took)
		}, "a", true},
		{"the take's event: gone from both", func() {
			took := eventMember("a", "3", v1alpha1.SandboxRunning)
			took.Labels[v1alpha1.LabelClaim] = "c"
			on(took, false)
		}, "", false},
		{"another member", func() { on(eventMember("b", "4", v1alpha1.SandboxRunning), false) }, "b", false},
		{"deleted, seen as a tombstone", func() {
			on(toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: eventMember("b", "4", v1alpha1.SandboxRunning)}, true)
		}, "", false},
	}
	for _, s := range steps {
		s.event()
		if got := pick(); got != s.want {
			t.Errorf("%s: pick %q, want %q", s.name, got, s.want)
		}
		if got := written.Has("ns", "a"); got != s.written {
			t.Errorf("%s: a's write held %v, want %v", s.name, got, s.written)
		}
	}
}
