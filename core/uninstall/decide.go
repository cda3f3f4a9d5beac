// Package uninstall decides, and carries out, what an uninstall of sandpod
// does with the Sandboxes that exist: the Helm chart's pre-delete hook runs
// it (`sandpod uninstall-check`, deploy/helm/sandpod/templates/uninstall-check.yaml)
// with the contract deploy/uninstall.sh has: while Sandboxes exist it
// refuses and says how many, unless told to keep them or to delete them.
package uninstall

import "fmt"

// Mode is what the operator said to do with the Sandboxes (the chart's
// value uninstall.sandboxes).
type Mode string

const (
	// ModeRefuse: refuse while any Sandbox exists (the default).
	ModeRefuse Mode = "refuse"
	// ModeKeep: go on and leave the Sandboxes, their PVCs and the CRDs in
	// place (a later install takes them over), like uninstall.sh --keep-data.
	ModeKeep Mode = "keep"
	// ModeDelete: delete the Sandboxes (and the claims and pools that would
	// make more, and their snapshots) and wait for them to go, while the
	// controller still runs to finalize them; like uninstall.sh --delete-data.
	ModeDelete Mode = "delete"
)

// ParseMode reads a Mode; anything else is an error naming the three.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeRefuse, ModeKeep, ModeDelete:
		return m, nil
	}
	return "", fmt.Errorf("%q: want refuse, keep or delete", s)
}

// Action is what the check does.
type Action int

const (
	// Proceed: nothing to keep or delete (no Sandbox): let the uninstall go on.
	Proceed Action = iota
	// Refuse: fail the hook, so that Helm deletes nothing.
	Refuse
	// Keep: let the uninstall go on, the Sandboxes stay.
	Keep
	// Delete: delete the sandpod objects first, then let it go on.
	Delete
)

func (a Action) String() string {
	switch a {
	case Proceed:
		return "proceed"
	case Refuse:
		return "refuse"
	case Keep:
		return "keep"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decide is the whole policy. Only Sandboxes count, as in uninstall.sh: they
// own the PVCs, the data. delete deletes even when no Sandbox exists: claims,
// pools and snapshots may still be there (deleting nothing is cheap).
func Decide(m Mode, sandboxes int) Action {
	switch {
	case m == ModeDelete:
		return Delete
	case sandboxes == 0:
		return Proceed
	case m == ModeKeep:
		return Keep
	default: // refuse, and an unknown mode: the safe answer
		return Refuse
	}
}
