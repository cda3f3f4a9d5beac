package errinfo

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
)

// SnapshotNotFound is the NOT_FOUND of a call whose snapshot does not exist.
func SnapshotNotFound(ns, name string) error {
	return New(codes.NotFound, ReasonSnapshotNotFound, map[string]string{"snapshot": name, "namespace": ns},
		fmt.Sprintf("snapshot %q not found in namespace %q (ListSnapshots shows what exists)", name, ns))
}

// SnapshotInUse is the FAILED_PRECONDITION of deleting a snapshot that
// users (sandboxes "sandbox/NAME", pools "pool/NAME") still need.
func SnapshotInUse(ns, name string, users []string) error {
	shown := users
	if len(shown) > 5 {
		shown = append(append([]string{}, shown[:5]...), fmt.Sprintf("and %d more", len(users)-5))
	}
	return New(codes.FailedPrecondition, ReasonSnapshotInUse,
		map[string]string{"snapshot": name, "namespace": ns, "users": strings.Join(users, ",")},
		fmt.Sprintf("snapshot %q is in use by %s: delete those sandboxes (or restore them to another snapshot) and remove it from those warm pools first", name, strings.Join(shown, ", ")))
}

// SnapshotQuota is the RESOURCE_EXHAUSTED of a snapshot over the quota.
func SnapshotQuota(ns, msg string) error {
	return New(codes.ResourceExhausted, ReasonSnapshotQuota, map[string]string{"namespace": ns}, msg)
}
