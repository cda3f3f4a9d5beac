package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal pair in the sandbox's own devpts (a
// local sandbox mounts a new instance; a pod has its container's), sized
// rows×cols. The slave belongs to owner (the user commands run as), so the
// command may reopen its terminal (/dev/tty) as a login would. Both ends
// are close-on-exec: only the command given the slave has it.
func openPTY(rows, cols uint16, owner *syscall.Credential) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	defer func() {
		if err != nil {
			master.Close()
			if slave != nil {
				slave.Close()
			}
		}
	}()
	var peer int
	var name string
	err = control(master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
		if err != nil {
			return fmt.Errorf("pty number: %w", err)
		}
		name = "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
		// TIOCGPTPEER opens the slave from the master itself, with no path
		// to look up (nothing to race, whatever /dev/pts holds); older
		// kernels and gVisor may lack it: then the path.
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
		if e == 0 {
			peer = int(r)
		} else {
			peer = -1
		}
		return setWinsize(fd, rows, cols)
	})
	if err != nil {
		return nil, nil, err
	}
	if peer >= 0 {
		slave = os.NewFile(uintptr(peer), name)
	} else if slave, err = os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0); err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	if owner != nil {
		if err := slave.Chown(int(owner.Uid), -1); err != nil {
			return nil, nil, fmt.Errorf("chown %s: %w", name, err)
		}
		if err := slave.Chmod(0o620); err != nil {
			return nil, nil, fmt.Errorf("chmod %s: %w", name, err)
		}
	}
	return master, slave, nil
}

func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func setWinsize(fd int, rows, cols uint16) error {
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		return fmt.Errorf("set size: %w", err)
	}
	return nil
}

// resizePTY sets the terminal's size; the kernel sends SIGWINCH to its
// foreground process group.
func resizePTY(master *os.File, rows, cols uint16) error {
	return control(master, func(fd int) error { return setWinsize(fd, rows, cols) })
}

// foregroundGroup is the terminal's foreground process group (a shell with
// job control moves each job into its own), 0 if unknown.
func foregroundGroup(master *os.File) int {
	pgrp := 0
	_ = control(master, func(fd int) error {
		n, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		if err == nil {
			pgrp = n
		}
		return nil
	})
	return pgrp
}

// killSession sends sig to every process of session sid: a terminal's
// shell puts its jobs in process groups of their own, so killing the
// command's group alone would leave them. (A process that made a session
// of its own has left, as one that left the group has from a plain exec.)
func killSession(sid int, sig syscall.Signal) {
	if sid <= 0 {
		return
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if s, ok := statSession(string(b)); ok && s == sid {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// statSession reads the session id out of a /proc/PID/stat line; the
// command name, in parentheses, may hold spaces and parentheses itself.
func statSession(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	// After the name: state ppid pgrp session ...
	f := strings.Fields(stat[i+1:])
	if len(f) < 4 {
		return 0, false
	}
	sid, err := strconv.Atoi(f[3])
	return sid, err == nil
}
