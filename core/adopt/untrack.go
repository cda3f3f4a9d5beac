package adopt

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Untrack is the merge patch that clears a pool member's managedFields,
// sent once, right before the member's first status write (the sandbox
// reconciler). kube-apiserver
// tracks field ownership on every update of an object that has
// managedFields, and not at all on one that has none (until someone uses
// server-side apply on it, which starts tracking again as usual): for a
// Sandbox, whose structural schema embeds a pod template's, that tracking
// is about half of what a write costs the API server (the kwok bed:
// 4.5 → 2.5 ms of kube-apiserver CPU per claim patch, see
// BenchmarkClaimPatchCost in tests/k8s). So the member's status write and
// the claim's take, the one write on a warm claim's critical path, and
// every later write of the claimed sandbox (leases, pauses, status) are
// untracked, for one write per member made. Nothing in sandpod reads
// managedFields (both caches strip them); `kubectl get --show-managed-fields`
// shows none on pool members and the sandboxes claims took from them.
var Untrack = client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`))
