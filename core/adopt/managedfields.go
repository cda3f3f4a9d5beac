package adopt

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kube-apiserver tracks field ownership on every update of an object that
// has managedFields, and skips it on an update that leaves an existing
// object without them (the skipNonAppliedManager in its field manager),
// until someone uses server-side apply on it. For a Sandbox, whose
// structural schema embeds a pod template's, that tracking is about half
// of what a write costs the API server (BenchmarkClaimPatchCost in
// bench/apicost). Nothing in sandpod reads managedFields (both caches strip
// them).

// resetManagedFields, sent as a write's metadata.managedFields, clears an
// object's managedFields: one empty entry is the API's reset (an empty
// list keeps them). Every take carries it (TakeWrite), so neither the take
// nor any later write of the claimed sandbox (leases, pauses, status) is
// tracked, whatever the member had.
var resetManagedFields = []metav1.ManagedFieldsEntry{{}}

// Untrack is the merge patch that clears a pool member's managedFields,
// sent once, right before the member's first status write (the sandbox
// reconciler, unless --untrack-pool-members=false): then that status write
// is untracked too, and so is the take. A take on a member that still has
// them costs kube-apiserver more even though it clears them (it applies
// the patch to the object with its managedFields), which is why this
// extra write per member stays the default.
var Untrack = client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`))
