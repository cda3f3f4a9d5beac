package readyourwrites

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cm(uid, rv, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: types.UID(uid), ResourceVersion: rv},
		Data:       map[string]string{"v": v},
	}
}

func TestCaughtUp(t *testing.T) {
	deleting := cm("u", "7", "x")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	cases := map[string]struct {
		written *corev1.ConfigMap
		deleted bool
		cached  *corev1.ConfigMap
		want    bool
	}{
		"a create not in the cache yet":    {written: cm("u", "5", "w"), cached: nil, want: false},
		"the cache is older than a write":  {written: cm("u", "5", "w"), cached: cm("u", "4", "c"), want: false},
		"the cache shows the write":        {written: cm("u", "5", "w"), cached: cm("u", "5", "w"), want: true},
		"the cache shows a later version":  {written: cm("u", "5", "w"), cached: cm("u", "6", "c"), want: true},
		"versions compare as integers":     {written: cm("u", "10", "w"), cached: cm("u", "9", "c"), want: false},
		"another object of the name":       {written: cm("u", "5", "w"), cached: cm("v", "2", "c"), want: true},
		"an unordered version: the cache":  {written: cm("u", "5", "w"), cached: cm("u", "x1", "c"), want: true},
		"a deletion not seen, a later rv":  {written: cm("u", "5", "w"), deleted: true, cached: cm("u", "6", "c"), want: false},
		"a deletion seen as deleting":      {written: cm("u", "5", "w"), deleted: true, cached: deleting, want: true},
		"a deletion seen as gone":          {written: cm("u", "5", "w"), deleted: true, cached: nil, want: true},
		"a deletion, then a new incarnate": {written: cm("u", "5", "w"), deleted: true, cached: cm("v", "9", "c"), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CaughtUp(tc.written, tc.deleted, tc.cached); got != tc.want {
				t.Errorf("CaughtUp = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStoreGet(t *testing.T) {
	s := New[*corev1.ConfigMap](time.Minute)
	s.Put(cm("u", "5", "w"))
	got := s.Get("ns", "a", cm("u", "4", "c"))
	if got.Data["v"] != "w" {
		t.Fatalf("a lagging cache: got %q, want the write", got.Data["v"])
	}
	got.Data["v"] = "changed by the caller"
	if again := s.Get("ns", "a", nil); again.Data["v"] != "w" {
		t.Errorf("a caller changed the stored write: %q", again.Data["v"])
	}
	if got := s.Get("ns", "a", cm("u", "6", "c")); got.Data["v"] != "c" {
		t.Errorf("a cache past the write: got %q, want the cache's", got.Data["v"])
	}
	if s.Len() != 0 || s.Has("ns", "a") {
		t.Error("an entry the cache caught up with was kept")
	}
	if got := s.Get("ns", "a", nil); got != nil {
		t.Errorf("nothing written, nothing cached: got %v", got)
	}
}

func TestStoreDeleted(t *testing.T) {
	s := New[*corev1.ConfigMap](time.Minute)
	s.PutDeleted(cm("u", "5", "w"))
	// A status write landed before the delete: still deleted for callers.
	if got := s.Get("ns", "a", cm("u", "6", "c")); got.DeletionTimestamp == nil || got.Data["v"] != "w" {
		t.Errorf("a deletion the cache has not seen: got %v", got)
	}
	s.Observe(cm("u", "6", "c"), false)
	if !s.Has("ns", "a") {
		t.Error("a later update dropped a deletion")
	}
	s.Observe(cm("u", "7", "c"), true)
	if s.Has("ns", "a") {
		t.Error("a delete event left the deletion")
	}
}

func TestStoreObserveAndPending(t *testing.T) {
	s := New[*corev1.ConfigMap](time.Minute)
	s.Put(cm("u", "5", "w"))
	b := cm("b", "3", "w")
	b.Name = "b"
	s.Put(b)
	other := cm("o", "3", "w")
	other.Namespace = "other"
	s.Put(other)
	if got := s.Pending("ns", nil); len(got) != 2 {
		t.Errorf("Pending(ns) = %d objects, want 2", len(got))
	}
	if got := s.Pending("ns", func(c *corev1.ConfigMap) bool { return c.Name == "b" }); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("Pending(ns, b) = %v", got)
	}
	s.Observe(cm("u", "4", "c"), false)
	if !s.Has("ns", "a") {
		t.Error("an older event dropped the write")
	}
	s.Observe(cm("u", "5", "w"), false)
	if s.Has("ns", "a") {
		t.Error("the event of the write left it")
	}
}

func TestStoreLapses(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New[*corev1.ConfigMap](time.Minute)
	s.now = func() time.Time { return now }
	s.Put(cm("u", "5", "w"))
	now = now.Add(time.Minute)
	if s.Has("ns", "a") || len(s.Pending("ns", nil)) != 0 {
		t.Error("a lapsed write is still pending")
	}
	if got := s.Get("ns", "a", cm("u", "4", "c")); got.Data["v"] != "c" {
		t.Errorf("a lapsed write hides the cache: %q", got.Data["v"])
	}
	// Writes never read again are swept by a later write.
	s.Put(cm("u", "5", "w"))
	b := cm("b", "3", "w")
	b.Name = "b"
	now = now.Add(2 * time.Minute)
	s.Put(b)
	if s.Len() != 1 {
		t.Errorf("%d entries after the sweep, want 1", s.Len())
	}
}

func TestObservedStoreKeepsEntriesUntilTheEvent(t *testing.T) {
	s := NewObserved[*corev1.ConfigMap](time.Minute)
	s.Put(cm("u", "5", "w"))
	if got := s.Get("ns", "a", cm("u", "5", "c")); got.Data["v"] != "c" {
		t.Errorf("a caught-up cache: got %q, want the cache's", got.Data["v"])
	}
	if !s.Has("ns", "a") {
		t.Error("a read dropped an entry that only its event should drop")
	}
	s.Observe(cm("u", "5", "c"), false)
	if s.Has("ns", "a") {
		t.Error("the event left the entry")
	}
}

func TestStoreKeepsTheLatestWrite(t *testing.T) {
	s := New[*corev1.ConfigMap](time.Minute)
	s.Put(cm("u", "6", "second"))
	s.Put(cm("u", "5", "first")) // answered late
	if got := s.Get("ns", "a", cm("u", "4", "c")); got.Data["v"] != "second" {
		t.Errorf("two writes answered out of order: got %q, want the later", got.Data["v"])
	}
	s.PutDeleted(cm("u", "6", "second"))
	s.Put(cm("u", "7", "late"))
	if got := s.Get("ns", "a", cm("u", "4", "c")); got.DeletionTimestamp == nil {
		t.Errorf("a write answered after the delete undid it: %v", got)
	}
	s.Put(cm("v", "9", "new incarnation"))
	if got := s.Get("ns", "a", nil); got.Data["v"] != "new incarnation" {
		t.Errorf("a new object of the name: got %q", got.Data["v"])
	}
}
