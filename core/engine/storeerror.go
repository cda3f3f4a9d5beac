package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// StoreError is why the engine refuses to start on a state directory: its
// store is damaged, or lost the records of sandboxes whose directories
// exist. Its message names the file and says what to do; `sandpod serve`
// prints it as it is.
type StoreError struct {
	// Path is the store file, Problem completes "the state store <Path> ...".
	Path, Problem string
	StateDir      string
	// Dirs counts the sandbox directories found under <StateDir>/sandboxes.
	Dirs   int
	Backup BackupInfo
}

// BackupInfo describes a store's backup file.
type BackupInfo struct {
	Path   string
	Exists bool
	// Problem says why the backup cannot be restored; "" when it can.
	Problem string
	// Taken is when it was written (its modification time).
	Taken     time.Time
	Sandboxes int
}

// Usable reports whether the backup can be restored.
func (b BackupInfo) Usable() bool { return b.Exists && b.Problem == "" }

func (b BackupInfo) String() string {
	switch {
	case !b.Exists:
		return b.Path + " does not exist"
	case b.Problem != "":
		return b.Path + " " + b.Problem
	}
	return fmt.Sprintf("%s (written %s, %d sandboxes)", b.Path, b.Taken.UTC().Format("2006-01-02 15:04:05 UTC"), b.Sandboxes)
}

func (e *StoreError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refusing to start: the state store %s %s.\n", e.Path, e.Problem)
	b.WriteString("Nothing was changed or deleted")
	if e.Dirs > 0 {
		fmt.Fprintf(&b, ": the %s under %s are kept, and what they still run keeps running",
			countDirs(e.Dirs), filepath.Join(e.StateDir, "sandboxes"))
	}
	b.WriteString(".\n")
	dir := shellQuote(e.StateDir)
	if e.Backup.Usable() {
		fmt.Fprintf(&b, "To recover from the backup %s, run\n    sandpod state restore --state-dir %s\n", e.Backup, dir)
		b.WriteString("then start serve again (the damaged store is kept beside it with a timestamp).\n")
		b.WriteString("Or, to give up this state and start empty, ")
	} else {
		fmt.Fprintf(&b, "There is no usable backup: %s.\nTo give up this state and start empty, ", e.Backup)
	}
	old := shellQuote(strings.TrimRight(e.StateDir, "/") + ".old")
	fmt.Fprintf(&b, "stop what it still runs and move it aside:\n    sandpod purge --state-dir %s && mv %s %s\n", dir, dir, old)
	b.WriteString("See docs/local-engine.md, \"Recovery\".")
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it, so a printed
// command can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
