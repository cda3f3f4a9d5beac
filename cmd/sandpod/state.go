package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sandpod/sandpod/core/engine"
)

func init() {
	register("state", "check a local state directory, or restore its store from the backup (serve must not be running)", runState)
}

const stateUsage = `usage: sandpod state <check|restore> [--state-dir DIR]

  check     say what the state directory holds and whether serve starts on it
            (exit 0: it starts; 1: it refuses, and the message says why)
  restore   put the backup (state.db.bak) in place of a damaged store, keeping
            the damaged file beside it; --force also replaces a sound store
`

func runState(_ context.Context, args []string) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "restore") {
		fmt.Fprint(os.Stderr, stateUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("state "+sub, flag.ContinueOnError)
	stateDir := fs.String("state-dir", defaultStateDir(), "the state directory of a stopped `sandpod serve`")
	force := false
	if sub == "restore" {
		fs.BoolVar(&force, "force", false, "restore even over a sound store (rolls the state back to the backup)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if sub == "check" {
		return stateCheck(os.Stdout, *stateDir)
	}
	return stateRestore(os.Stdout, *stateDir, force)
}

func stateCheck(w io.Writer, dir string) int {
	rep, err := engine.CheckState(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandpod state check:", err)
		return 1
	}
	fmt.Fprintf(w, "state directory %s\n", rep.StateDir)
	switch {
	case rep.Fresh:
		fmt.Fprintf(w, "store   %s: none yet (serve makes a new one)\n", rep.Store)
	case rep.Problem != "":
		fmt.Fprintf(w, "store   %s: UNUSABLE: %s\n", rep.Store, rep.Problem)
	default:
		fmt.Fprintf(w, "store   %s: sound, %d sandboxes, %d request ids\n", rep.Store, rep.Sandboxes, rep.Requests)
	}
	fmt.Fprintf(w, "backup  %s\n", rep.Backup)
	fmt.Fprintf(w, "sandbox directories: %d\n", len(rep.Dirs))
	if len(rep.Orphans) > 0 {
		fmt.Fprintf(w, "  without a record (kept, not managed by serve): %s\n", strings.Join(rep.Orphans, ", "))
	}
	fmt.Fprintf(w, "snapshots: %d\n", len(rep.Snapshots))
	if len(rep.SnapshotOrphans) > 0 {
		fmt.Fprintf(w, "  directories without a record (not served; remove them by hand): %s\n", strings.Join(rep.SnapshotOrphans, ", "))
	}
	if len(rep.SnapshotsMissing) > 0 {
		fmt.Fprintf(w, "  records whose files are missing (served as FAILED; delete them): %s\n", strings.Join(rep.SnapshotsMissing, ", "))
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintf(w, "\nserve would refuse to start:\n%v\n", err)
		return 1
	}
	fmt.Fprintln(w, "serve starts on it")
	return 0
}

func stateRestore(w io.Writer, dir string, force bool) int {
	r, err := engine.RestoreBackup(dir, force)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandpod state restore:", err)
		return 1
	}
	fmt.Fprintf(w, "restored %s from the backup %s\n", r.Store, r.Backup)
	if r.Aside != "" {
		fmt.Fprintf(w, "the store it replaced is kept at %s\n", r.Aside)
	}
	if len(r.Orphans) > 0 {
		fmt.Fprintf(w, "%d sandbox directories have no record in the backup (made after it was taken): %s\n", len(r.Orphans), strings.Join(r.Orphans, ", "))
		fmt.Fprintln(w, "  their files are kept; serve does not manage them (see docs/local-engine.md, \"Recovery\")")
	}
	fmt.Fprintln(w, "start serve again on this state directory")
	return 0
}
