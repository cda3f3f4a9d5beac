package lifecycle

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	ready := func(s metav1.ConditionStatus, reason, msg string, gen int64, at time.Time) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(at)}
	}
	other := metav1.Condition{Type: "Finished", Status: metav1.ConditionTrue, Reason: "Done", LastTransitionTime: metav1.NewTime(t0)}
	tests := map[string]struct {
		before []metav1.Condition
		ok     bool
		reason string
		msg    string
		gen    int64
		want   []metav1.Condition
	}{
		"new, true": {nil, true, "Up", "", 3,
			[]metav1.Condition{ready(metav1.ConditionTrue, "Up", "", 3, t1)}},
		"new, false": {nil, false, "Down", "why", 1,
			[]metav1.Condition{ready(metav1.ConditionFalse, "Down", "why", 1, t1)}},
		"status flips: transition now": {[]metav1.Condition{ready(metav1.ConditionFalse, "Down", "", 1, t0)}, true, "Up", "", 2,
			[]metav1.Condition{ready(metav1.ConditionTrue, "Up", "", 2, t1)}},
		"same status, new reason and generation: transition time kept": {[]metav1.Condition{ready(metav1.ConditionFalse, "Pending", "", 1, t0)}, false, "Failed", "no", 2,
			[]metav1.Condition{ready(metav1.ConditionFalse, "Failed", "no", 2, t0)}},
		"other types untouched": {[]metav1.Condition{other}, true, "Up", "", 1,
			[]metav1.Condition{other, ready(metav1.ConditionTrue, "Up", "", 1, t1)}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tt.before...)
			SetCondition(&conds, "Ready", tt.ok, tt.reason, tt.msg, tt.gen, t1)
			if !reflect.DeepEqual(conds, tt.want) {
				t.Errorf("conditions = %+v\nwant %+v", conds, tt.want)
			}
		})
	}
}
