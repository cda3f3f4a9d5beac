package lifecycle

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition sets the condition of type t in conds: True when ok, False
// otherwise, observed at generation gen. Its LastTransitionTime is now when
// the status changes and stays as it was when it does not (a reason or
// message change is no transition). Every condition sandpod writes goes
// through here, so each carries ObservedGeneration.
func SetCondition(conds *[]metav1.Condition, t string, ok bool, reason, msg string, gen int64, now time.Time) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: msg,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now),
	})
}
