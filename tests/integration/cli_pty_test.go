package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cliShellOnTerminal runs `sandpod shell NAME` as a person does: on a
// terminal of its own (a pty made here), with a window size. The sandbox's
// shell must see that size, follow a resize of the window, echo and edit
// what is typed itself (raw mode here), and hand back its exit status.
func cliShellOnTerminal(t *testing.T, c *cli, name string) {
	master, slave := openTestPty(t, 30, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "shell", name)
	cmd.Env = c.environ(nil)
	cmd.Dir = c.home
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = slave.Close()

	out := make(chan []byte, 64)
	go func() {
		defer close(out)
		for {
			b := make([]byte, 4096)
			n, err := master.Read(b)
			if n > 0 {
				out <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var seen bytes.Buffer
	// expect waits for re on the terminal and returns its first group;
	// what follows the match stays for the next expect.
	expect := func(re string) string {
		t.Helper()
		rx := regexp.MustCompile(re)
		deadline := time.After(time.Minute)
		for {
			if m := rx.FindSubmatchIndex(seen.Bytes()); m != nil {
				got := ""
				if len(m) >= 4 && m[2] >= 0 {
					got = string(seen.Bytes()[m[2]:m[3]])
				}
				rest := append([]byte(nil), seen.Bytes()[m[1]:]...)
				seen.Reset()
				seen.Write(rest)
				return got
			}
			select {
			case b, ok := <-out:
				if !ok {
					t.Fatalf("the terminal closed before %q; it showed %q", re, seen.String())
				}
				seen.Write(b)
			case <-deadline:
				t.Fatalf("no %q on the terminal; it showed %q", re, seen.String())
			}
		}
	}
	send := func(s string) {
		t.Helper()
		if _, err := master.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	// The answer is marked by arithmetic (SZ2=), so that the terminal's
	// echo of the typed line cannot match it.
	size := func() string {
		send("echo SZ$((1+1))=$(stty size | tr ' ' x)\r")
		return expect(`SZ2=(\d+x\d+)`)
	}

	if got := size(); got != "30x100" {
		t.Fatalf("the sandbox's terminal is %s, want 30x100 (the window's size)", got)
	}
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatal(err)
	}
	// The resize travels as SIGWINCH here, then a message to the sandbox:
	// ask until the shell sees it.
	deadline := time.Now().Add(time.Minute)
	for size() != "40x120" {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's terminal never took the new window size 40x120")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Line editing is the sandbox's: abc, a backspace, d.
	send("echo x$((2+3))abc\x7fdy\r")
	expect(`x5abdy`)
	send("exit 7\r")

	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("shell on a terminal ended with %v, want exit status 7", err)
	}
}

// openTestPty makes a pseudo-terminal pair with a window size.
func openTestPty(t *testing.T, rows, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return m, s
}
