package uninstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// ErrRefused: Sandboxes exist and the mode is refuse. The message is
// already written out.
var ErrRefused = errors.New("refused: Sandboxes exist")

// Options of a Run.
type Options struct {
	Mode    Mode
	Release Release
	// Poll is how often delete looks whether the objects are gone.
	Poll time.Duration
}

// Run counts the Sandboxes of all namespaces, decides (Decide) and acts,
// writing what it finds and does to out. Refuse returns ErrRefused. The
// client needs list on sandboxes; delete also list and delete on the kinds
// of deleteOrder. ctx bounds the wait of delete.
func Run(ctx context.Context, cl client.Client, o Options, out io.Writer) (Action, error) {
	names, err := sandboxNames(ctx, cl)
	if err != nil {
		return Refuse, fmt.Errorf("list sandboxes: %w", err)
	}
	a := Decide(o.Mode, len(names))
	switch a {
	case Proceed:
		fmt.Fprintln(out, "no Sandbox exists: the uninstall goes on")
	case Refuse:
		fmt.Fprint(out, RefusalMessage(len(names), names, o.Release))
		return a, ErrRefused
	case Keep:
		fmt.Fprintf(out, "keeping %d %s, their PVCs and the CRDs (uninstall.sandboxes=keep): the uninstall goes on\n",
			len(names), plural(len(names), "Sandbox", "Sandboxes"))
	case Delete:
		fmt.Fprintf(out, "deleting the sandpod objects of all namespaces (uninstall.sandboxes=delete): %d %s\n",
			len(names), plural(len(names), "Sandbox", "Sandboxes"))
		if err := deleteAll(ctx, cl, o.Poll, out); err != nil {
			return a, err
		}
		fmt.Fprintln(out, "all deleted (their PVCs go with them, by owner reference): the uninstall goes on")
	}
	return a, nil
}

func sandboxNames(ctx context.Context, cl client.Client) ([]string, error) {
	l := &v1alpha1.SandboxList{}
	if err := cl.List(ctx, l); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) { // no CRD: no Sandbox
			return nil, nil
		}
		return nil, err
	}
	names := make([]string, 0, len(l.Items))
	for _, s := range l.Items {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	sort.Strings(names)
	return names, nil
}

// deleteOrder: pools first (else they refill), claims (they hold their
// sandboxes), the sandboxes (their finalizer needs the controller, which
// is why this runs before Helm deletes it), then snapshots (a finalizer
// keeps each while a sandbox uses it). Templates and quotas are settings,
// not data: they stay with the CRDs.
var deleteOrder = []struct {
	kind string
	list func() client.ObjectList
}{
	{"SandboxWarmPools", func() client.ObjectList { return &v1alpha1.SandboxWarmPoolList{} }},
	{"SandboxClaims", func() client.ObjectList { return &v1alpha1.SandboxClaimList{} }},
	{"Sandboxes", func() client.ObjectList { return &v1alpha1.SandboxList{} }},
	{"SandboxSnapshots", func() client.ObjectList { return &v1alpha1.SandboxSnapshotList{} }},
}

func deleteAll(ctx context.Context, cl client.Client, poll time.Duration, out io.Writer) error {
	if poll <= 0 {
		poll = 2 * time.Second
	}
	for _, k := range deleteOrder {
		left, err := deleteKind(ctx, cl, k.list)
		if err != nil {
			return fmt.Errorf("delete %s: %w", k.kind, err)
		}
		if left == 0 {
			continue
		}
		fmt.Fprintf(out, "  %s: deleting %d, waiting for them to go\n", k.kind, left)
		for left > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: %d still there: %w", k.kind, left, ctx.Err())
			case <-time.After(poll):
			}
			// Again, not only counted: a pool or claim made meanwhile goes too.
			if left, err = deleteKind(ctx, cl, k.list); err != nil {
				return fmt.Errorf("delete %s: %w", k.kind, err)
			}
		}
		fmt.Fprintf(out, "  %s: all gone\n", k.kind)
	}
	return nil
}

// deleteKind deletes every object of a kind that is not being deleted
// already, and returns how many are left (deleting or not).
func deleteKind(ctx context.Context, cl client.Client, newList func() client.ObjectList) (int, error) {
	l := newList()
	if err := cl.List(ctx, l); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return 0, err
	}
	for _, ro := range objs {
		o, ok := ro.(client.Object)
		if !ok || o.GetDeletionTimestamp() != nil {
			continue
		}
		if err := cl.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	return len(objs), nil
}
