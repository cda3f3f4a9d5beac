package engine

import (
	"errors"
	"fmt"

	"github.com/sandpod/sandpod/core/engine/cgroups"
)

// The cgroup freezer pauses a sandbox: every process of its container stops
// where it is, memory and open files kept, and uses no CPU until thawed.
// The engine writes the container's freezer file itself (a few hundred
// microseconds) where it made the container's cgroup (the one it gives
// runc, see launch; the files are cgroups.Layout.Freezer's); elsewhere it
// asks runc (`runc pause`/`runc resume`, an exec of runc each). Both work
// on cgroup v1 (the freezer hierarchy) and v2 (cgroup.freeze).
//
// A process frozen by the v1 freezer cannot even die: a SIGKILL waits for
// the thaw. So kill thaws after it signals (see process.kill).

// containerCgroup is the container's cgroup of id as the engine reads and
// writes it (none when the engine runs containers without cgroups of its
// own: runc decides).
func (e *Engine) containerCgroup(id string) cgroups.Container {
	if id == "" {
		return cgroups.Container{}
	}
	return e.cg.Container(id)
}

// freeze stops every process of p's container. A process being killed is
// not frozen (errGone).
func (p *process) freeze() error {
	p.freezeMu.Lock()
	defer p.freezeMu.Unlock()
	if p.killing {
		return errGone
	}
	if f, ok := p.cgroup.Freezer(); ok {
		if err := f.Set(f.FrozenIn, f.FrozenOut); err != nil {
			_ = f.Set(f.ThawedIn, f.ThawedOut)
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
	if f, ok := p.cgroup.Freezer(); ok {
		if err := f.Set(f.ThawedIn, f.ThawedOut); err != nil {
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
	if f, ok := p.cgroup.Freezer(); ok {
		return f.Settled(f.FrozenOut)
	}
	if p.id == "" {
		return false, errors.New("no container")
	}
	return p.runcPaused(), nil
}

func (p *process) runcPaused() bool {
	return p.id != "" && p.runc.status(p.id) == "paused"
}
