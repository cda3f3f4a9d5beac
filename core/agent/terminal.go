package agent

import (
	"fmt"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Terminal bounds, checked by the bridge at the edge and again here.
const (
	// MaxTerminalSize bounds rows and columns: the kernel takes up to
	// 65535, but nothing shows a terminal that large, and a program that
	// sizes a screen buffer by it should not be made to allocate gigabytes.
	MaxTerminalSize = 1000
	// MaxTermLen bounds the TERM name.
	MaxTermLen = 64
	// DefaultTerm is TERM when the request names none.
	DefaultTerm = "xterm-256color"
)

// CheckTerminalSize checks a terminal size (of a start or of a resize).
func CheckTerminalSize(sz *sandpodv1.TerminalSize) error {
	if sz == nil {
		return fmt.Errorf("the size (rows and cols) is required")
	}
	if sz.GetRows() < 1 || sz.GetRows() > MaxTerminalSize || sz.GetCols() < 1 || sz.GetCols() > MaxTerminalSize {
		return fmt.Errorf("rows and cols must each be between 1 and %d, got %d×%d", MaxTerminalSize, sz.GetRows(), sz.GetCols())
	}
	return nil
}

// CheckPty checks the pty of an ExecStart; nil (no terminal) is fine.
func CheckPty(p *sandpodv1.PtyRequest) error {
	if p == nil {
		return nil
	}
	if err := CheckTerminalSize(p.GetSize()); err != nil {
		return err
	}
	if len(p.GetTerm()) > MaxTermLen {
		return fmt.Errorf("term is %d bytes, the limit is %d", len(p.GetTerm()), MaxTermLen)
	}
	for _, c := range []byte(p.GetTerm()) {
		if c <= ' ' || c > '~' {
			return fmt.Errorf("term %q: only printable ASCII without spaces", p.GetTerm())
		}
	}
	return nil
}

// ErrNoTerminal is the message for a resize on an exec without a pty.
const ErrNoTerminal = "resize: this exec has no terminal; start it with pty to resize it"
