package kube

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// uncertainTakes remembers, per request id, the member a claim's take was
// written to when the write failed without saying whether it was applied
// (adopt.Uncertain: kube-apiserver killed mid-call, a dropped connection, a
// deadline). The API server may have stored it, and the informer cache may
// not show it for seconds (a restarted API server replays its watches), so
// the index by request id cannot tell. A retry of that request id reads the
// member from the API server first: if the take landed, the member is the
// answer; otherwise the claim takes another. Without this a claim retried
// across a kube-apiserver crash could take a second member and leave the
// first claimed by no one (tests/k8s/kwoke2e, TestClaimBurstsSurviveKills).
type uncertainTakes struct {
	mu sync.Mutex
	m  map[string]uncertainTake // "ns/request id"
}

type uncertainTake struct {
	member string
	at     time.Time
}

// uncertainTTL bounds how long a take nobody retries is remembered.
const uncertainTTL = 10 * time.Minute

func (u *uncertainTakes) put(ns, id, member string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]uncertainTake{}
	}
	for k, t := range u.m {
		if now.Sub(t.at) > uncertainTTL {
			delete(u.m, k)
		}
	}
	u.m[ns+"/"+id] = uncertainTake{member: member, at: now}
}

func (u *uncertainTakes) get(ns, id string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[ns+"/"+id].member
}

func (u *uncertainTakes) drop(ns, id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, ns+"/"+id)
}

// uncertainClaim resolves an uncertain take of request id: the member when
// the take landed (it carries the id), nil when it did not (or nothing is
// uncertain), an error when the API server cannot tell yet.
func (b *Backend) uncertainClaim(ctx context.Context, ns, id string) (*v1alpha1.Sandbox, error) {
	name := b.uncertain.get(ns, id)
	if name == "" {
		return nil, nil
	}
	// Past the cache: it is what cannot tell.
	sb := &v1alpha1.Sandbox{}
	err := b.live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sb)
	if apierrors.IsNotFound(err) {
		b.uncertain.drop(ns, id)
		return nil, nil
	}
	if err != nil {
		return nil, apiError(err, "read sandbox %q (taken for request id %q by a write whose outcome was lost)", name, id)
	}
	b.uncertain.drop(ns, id)
	if sb.Annotations[v1alpha1.AnnotationRequestID] != id || sb.DeletionTimestamp != nil {
		return nil, nil
	}
	b.recent.put(sb)
	return sb, nil
}
