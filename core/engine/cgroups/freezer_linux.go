package cgroups

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// freezeTimeout bounds a freeze: a cgroup that does not settle (a fork
// storm racing the freezer) is thawed again and the pause fails.
const freezeTimeout = 10 * time.Second

// Settled reports whether the freezer's read file shows want.
func (f FreezerFiles) Settled(want string) (bool, error) {
	b, err := os.ReadFile(f.Read)
	if err != nil {
		return false, err
	}
	s := string(b)
	if f.Read == f.Write { // v1: the state itself
		return strings.TrimSpace(s) == want, nil
	}
	for _, line := range strings.Split(s, "\n") { // v2: a line of cgroup.events
		if strings.TrimSpace(line) == want {
			return true, nil
		}
	}
	return false, nil
}

// Set writes in and waits until the freezer reads out. The v1 freezer
// passes through FREEZING while it catches every task (new forks too); it
// is written again on each poll, as runc does, so a task forked meanwhile
// is caught.
func (f FreezerFiles) Set(in, out string) error {
	deadline := time.Now().Add(freezeTimeout)
	wait := 50 * time.Microsecond
	for {
		if err := os.WriteFile(f.Write, []byte(in), 0); err != nil {
			return err
		}
		ok, err := f.Settled(out)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the freezer did not reach %s within %s", out, freezeTimeout)
		}
		time.Sleep(wait)
		wait = min(wait*2, 10*time.Millisecond)
	}
}
