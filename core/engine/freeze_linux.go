package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// The cgroup freezer pauses a sandbox: every process of its container stops
// where it is, memory and open files kept, and uses no CPU until thawed.
// The engine writes the container's freezer file itself (a few hundred
// microseconds) where it made the container's cgroup (the one it gives
// runc, see launch; the files are cgroupLayout.freezer's); elsewhere it
// asks runc (`runc pause`/`runc resume`, an exec of runc each). Both work
// on cgroup v1 (the freezer hierarchy) and v2 (cgroup.freeze).
//
// A process frozen by the v1 freezer cannot even die: a SIGKILL waits for
// the thaw. So kill thaws after it signals (see process.kill).

// freezeTimeout bounds a freeze: a cgroup that does not settle (a fork
// storm racing the freezer) is thawed again and the pause fails.
const freezeTimeout = 10 * time.Second

// containerCgroup is the container's cgroup of id as the engine reads and
// writes it (none when the engine runs containers without cgroups of its
// own: runc decides).
func (e *Engine) containerCgroup(id string) containerCgroup {
	if id == "" {
		return containerCgroup{}
	}
	return e.cg.container(id)
}

// settled reports whether the freezer's read file shows want.
func (f freezerFiles) settled(want string) (bool, error) {
	b, err := os.ReadFile(f.read)
	if err != nil {
		return false, err
	}
	s := string(b)
	if f.read == f.write { // v1: the state itself
		return strings.TrimSpace(s) == want, nil
	}
	for _, line := range strings.Split(s, "\n") { // v2: a line of cgroup.events
		if strings.TrimSpace(line) == want {
			return true, nil
		}
	}
	return false, nil
}

// set writes in and waits until the freezer reads out. The v1 freezer
// passes through FREEZING while it catches every task (new forks too); it
// is written again on each poll, as runc does, so a task forked meanwhile
// is caught.
func (f freezerFiles) set(in, out string) error {
	deadline := time.Now().Add(freezeTimeout)
	wait := 50 * time.Microsecond
	for {
		if err := os.WriteFile(f.write, []byte(in), 0); err != nil {
			return err
		}
		ok, err := f.settled(out)
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

// freeze stops every process of p's container. A process being killed is
// not frozen (errGone).
func (p *process) freeze() error {
	p.freezeMu.Lock()
	defer p.freezeMu.Unlock()
	if p.killing {
		return errGone
	}
	if f, ok := p.cgroup.freezerFiles(); ok {
		if err := f.set(f.frozenIn, f.frozenOut); err != nil {
			_ = f.set(f.thawedIn, f.thawedOut)
			return fmt.Errorf("freeze: %w", err)
		}
	} else if err := p.runc.do("pause", p.id); err != nil {
		return err
	}
	p.frozen = true
	return nil
}

// thaw lets p's processes run again from where they stopped.
func (p *process) thaw() error {
	p.freezeMu.Lock()
	defer p.freezeMu.Unlock()
	return p.thawLocked()
}

func (p *process) thawLocked() error {
	if f, ok := p.cgroup.freezerFiles(); ok {
		if err := f.set(f.thawedIn, f.thawedOut); err != nil {
			return fmt.Errorf("thaw: %w", err)
		}
	} else if p.frozen || p.runcPaused() {
		if err := p.runc.do("resume", p.id); err != nil {
			return err
		}
	}
	p.frozen = false
	return nil
}

// isFrozen reads whether p's container is frozen now (after a restart of
// the engine, which remembers only what it recorded).
func (p *process) isFrozen() (bool, error) {
	if f, ok := p.cgroup.freezerFiles(); ok {
		return f.settled(f.frozenOut)
	}
	if p.id == "" {
		return false, errors.New("no container")
	}
	return p.runcPaused(), nil
}

func (p *process) runcPaused() bool {
	return p.id != "" && p.runc.status(p.id) == "paused"
}
