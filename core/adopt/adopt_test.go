package adopt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	"github.com/sandpod/sandpod/core/readyourwrites"
)

func member(name, hash string, phase v1alpha1.SandboxPhase, age time.Duration) *v1alpha1.Sandbox {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", ResourceVersion: "7",
		CreationTimestamp: metav1.NewTime(t0.Add(-age)),
		Labels:            map[string]string{v1alpha1.LabelPool: "p", v1alpha1.LabelTemplateHash: hash},
	}}
	sb.Status.Phase = phase
	return sb
}

// order drains a Next, skipping nothing but what it already returned.
func order(next Next) []string {
	var got []string
	for {
		sb, ok := next(func(n string) bool { return slices.Contains(got, n) })
		if !ok {
			return got
		}
		got = append(got, sb.Name)
	}
}

func TestCandidates(t *testing.T) {
	run := v1alpha1.SandboxRunning
	cases := map[string]struct {
		members []*v1alpha1.Sandbox
		want    []string
	}{
		"none":               {nil, nil},
		"only ready ones":    {[]*v1alpha1.Sandbox{member("a", "h", v1alpha1.SandboxPending, 3), member("b", "h", run, 1), member("c", "h", v1alpha1.SandboxFailed, 5)}, []string{"b"}},
		"oldest first":       {[]*v1alpha1.Sandbox{member("young", "h", run, 1), member("old", "h", run, 9)}, []string{"old", "young"}},
		"current hash first": {[]*v1alpha1.Sandbox{member("stale", "x", run, 9), member("fresh", "h", run, 1)}, []string{"fresh", "stale"}},
		"suspended is no take": {[]*v1alpha1.Sandbox{func() *v1alpha1.Sandbox {
			sb := member("s", "h", run, 1)
			sb.Spec.OperatingMode = v1alpha1.OperatingModeSuspended
			return sb
		}()}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := order(Candidates(tc.members, "h")); !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCandidatesInClaimCandidatesOrder: the lazy Next (one pass per call)
// drains in the order of lifecycle.ClaimCandidates, ties of age included
// (broken by name), over mixed pools of every size up to 60.
func TestCandidatesInClaimCandidatesOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	phases := []v1alpha1.SandboxPhase{v1alpha1.SandboxRunning, v1alpha1.SandboxRunning, v1alpha1.SandboxPending, v1alpha1.SandboxFailed}
	for n := 0; n <= 60; n++ {
		var members []*v1alpha1.Sandbox
		var views []lifecycle.PoolMember
		for _, i := range rng.Perm(n) { // unique names, in random order
			hash := []string{"h", "old"}[rng.IntN(2)]
			sb := member(fmt.Sprintf("m-%02d", i), hash, phases[rng.IntN(len(phases))], time.Duration(rng.IntN(5))*time.Second)
			members = append(members, sb)
			views = append(views, ToPoolMember(sb))
		}
		want := lifecycle.ClaimCandidates(views, "h")
		if got := order(Candidates(members, "h")); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%d members: order %v, want %v", n, got, want)
		}
	}
}

// scripted answers each member's patch with its error (nil: the write wins).
type scripted struct {
	errs    map[string]error
	patched []string
}

func (s *scripted) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
	s.patched = append(s.patched, obj.GetName())
	if err := s.errs[obj.GetName()]; err != nil {
		return err
	}
	obj.SetResourceVersion("8") // the API server's answer: the members are at 7
	return nil
}

func TestAdoptionRun(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "sandboxes"}
	conflict := apierrors.NewConflict(gr, "x", errors.New("changed"))
	gone := apierrors.NewNotFound(gr, "x")
	broken := errors.New("connection refused")
	members := []*v1alpha1.Sandbox{member("a", "h", v1alpha1.SandboxRunning, 3), member("b", "h", v1alpha1.SandboxRunning, 2), member("c", "h", v1alpha1.SandboxRunning, 1)}
	cases := map[string]struct {
		errs        map[string]error
		held        []string // reserved by another claim of this process
		wantTaken   string
		wantPatched []string
		wantErr     error
		wantRefused []string
	}{
		"first wins":                {wantTaken: "a", wantPatched: []string{"a"}},
		"conflict then next":        {errs: map[string]error{"a": conflict}, wantTaken: "b", wantPatched: []string{"a", "b"}, wantRefused: []string{"a"}},
		"gone then next":            {errs: map[string]error{"a": gone, "b": conflict}, wantTaken: "c", wantPatched: []string{"a", "b", "c"}, wantRefused: []string{"a", "b"}},
		"all refused: none":         {errs: map[string]error{"a": conflict, "b": conflict, "c": gone}, wantPatched: []string{"a", "b", "c"}, wantRefused: []string{"a", "b", "c"}},
		"reserved ones are skipped": {held: []string{"a", "b"}, wantTaken: "c", wantPatched: []string{"c"}},
		"other errors stop":         {errs: map[string]error{"a": broken}, wantPatched: []string{"a"}, wantErr: broken},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &scripted{errs: tc.errs}
			taken := NewTaken(nil)
			for _, n := range tc.held {
				taken.Reserve("ns", n)
			}
			var refused []string
			sb, failed, err := Adoption{
				Writer:  w,
				Taken:   taken,
				Next:    Candidates(members, "h"),
				Apply:   func(sb *v1alpha1.Sandbox) { Take(sb, Holder{RequestID: "r"}) },
				Refused: func(n string, _ error) { refused = append(refused, n) },
			}.Run(context.Background(), "ns")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil && failed != "a" {
				t.Errorf("failed member %q, want a", failed)
			}
			got := ""
			if sb != nil {
				got = sb.Name
			}
			if got != tc.wantTaken || !slices.Equal(w.patched, tc.wantPatched) || !slices.Equal(refused, tc.wantRefused) {
				t.Errorf("took %q after %v (refused %v), want %q after %v (refused %v)", got, w.patched, refused, tc.wantTaken, tc.wantPatched, tc.wantRefused)
			}
			// A refused or failed write gives its reservation back; the
			// winner keeps its own.
			for _, n := range w.patched {
				if want := n == tc.wantTaken; taken.Held("ns", n) != want {
					t.Errorf("%s held %v after the take, want %v", n, !want, want)
				}
			}
		})
	}
}

func TestAdoptionRunWithoutTaken(t *testing.T) {
	w := &scripted{}
	sb, _, err := Adoption{Writer: w, Next: Candidates([]*v1alpha1.Sandbox{member("a", "h", v1alpha1.SandboxRunning, 1)}, "h"), Apply: func(*v1alpha1.Sandbox) {}}.Run(context.Background(), "ns")
	if err != nil || sb == nil || sb.Name != "a" {
		t.Fatalf("took %v, %v; want a", sb, err)
	}
}

func TestUncertain(t *testing.T) {
	gr := schema.GroupResource{Group: "sandpod.dev", Resource: "sandboxes"}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"no error":                  {nil, false},
		"conflict: another took it": {apierrors.NewConflict(gr, "m", errors.New("rv")), false},
		"not found":                 {apierrors.NewNotFound(gr, "m"), false},
		"forbidden":                 {apierrors.NewForbidden(gr, "m", errors.New("no")), false},
		"throttled":                 {apierrors.NewTooManyRequests("slow down", 1), false},
		"server timeout":            {apierrors.NewServerTimeout(gr, "patch", 1), true},
		"gateway timeout":           {apierrors.NewTimeoutError("etcd", 1), true},
		"internal error":            {apierrors.NewInternalError(errors.New("etcd")), true},
		"connection reset mid-call": {fmt.Errorf("patch: %w", syscall.ECONNRESET), true},
		"the caller's deadline":     {context.DeadlineExceeded, true},
		"wrapped conflict":          {fmt.Errorf("take: %w", apierrors.NewConflict(gr, "m", errors.New("rv"))), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Uncertain(tc.err); got != tc.want {
				t.Errorf("Uncertain(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// A member this process took stays skipped while the cache still offers it
// as free (each claim would otherwise pay a refused write for it), and only
// until the cache shows it taken.
func TestAdoptionSkipsWhatItTookUntilTheCacheShowsIt(t *testing.T) {
	stale := []*v1alpha1.Sandbox{member("a", "h", v1alpha1.SandboxRunning, 2), member("b", "h", v1alpha1.SandboxRunning, 1)}
	w := &scripted{}
	written := readyourwrites.New[*v1alpha1.Sandbox](0)
	taken := NewTaken(written)
	for range 2 {
		if _, _, err := (Adoption{Writer: w, Taken: taken, Next: Candidates(stale, "h"), Apply: func(*v1alpha1.Sandbox) {}}).Run(context.Background(), "ns"); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(w.patched, []string{"a", "b"}) {
		t.Errorf("patched %v over a cache that shows neither take, want [a b]", w.patched)
	}
	seen := member("a", "h", v1alpha1.SandboxRunning, 2)
	seen.ResourceVersion = "8" // the take's write (member at 7)
	written.Observe(seen, false)
	if taken.Held("ns", "a") || !taken.Held("ns", "b") {
		t.Errorf("held a=%v b=%v once the cache shows a's take, want false true", taken.Held("ns", "a"), taken.Held("ns", "b"))
	}
}
