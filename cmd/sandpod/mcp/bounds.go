package mcp

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The bounds of one tool call's output. A model reads every byte a tool
// returns, so a command that prints a megabyte must not hand it all over:
// past the bound the middle is cut (the start says what ran, the end how
// it failed) and the result says so.
const (
	// MaxStreamBytes is the most of a command's or a cell's stdout (and,
	// apart, of its stderr) a result holds.
	MaxStreamBytes = 32 << 10
	// fetchStreamBytes is the most the server sends of each stream: enough
	// past MaxStreamBytes to keep a real end, bounded for memory.
	fetchStreamBytes = 4 << 20
	// MaxReadBytes is the most read_file returns in one call (and its
	// default); ask for the rest with offset.
	MaxReadBytes = 256 << 10
	// MaxWriteBytes is the largest write_file content, decoded.
	MaxWriteBytes = 8 << 20
	// MaxListEntries is the most entries list_files and list_sandboxes
	// return.
	MaxListEntries = 500
	// MaxImages is the most images one run_code result carries, and
	// MaxImageBytes the largest one.
	MaxImages     = 8
	MaxImageBytes = 4 << 20
	// MaxResultText is the most of one run_code result's text/plain kept.
	MaxResultText = 8 << 10
)

// clip returns b as UTF-8 text when it holds at most limit bytes; else its
// first and last limit/2 bytes (whole characters) around a line that says
// how many bytes were left out, and cut is true. Bytes that are not UTF-8
// become U+FFFD.
func clip(b []byte, limit int) (text string, cut bool) {
	if len(b) <= limit {
		return strings.ToValidUTF8(string(b), "\uFFFD"), false
	}
	head := runeStart(b, limit/2)
	tail := len(b) - (limit - limit/2)
	for tail < len(b) && !utf8.RuneStart(b[tail]) {
		tail++ // whole characters only, within the bound
	}
	marker := fmt.Sprintf("\n[... %d of %d bytes left out: the first and last %d are kept ...]\n", tail-head, len(b), limit/2)
	return strings.ToValidUTF8(string(b[:head]), "\uFFFD") + marker + strings.ToValidUTF8(string(b[tail:]), "\uFFFD"), true
}

// clipString is clip for a string.
func clipString(s string, limit int) (string, bool) {
	return clip([]byte(s), limit)
}

// runeStart moves n back to the start of the character it falls in.
func runeStart(b []byte, n int) int {
	for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}
