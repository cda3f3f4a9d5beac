package agent

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
)

// ListFiles pages (AIP-158).
const (
	// DefaultListPageSize is the page size of a ListFiles call that asks
	// for none.
	DefaultListPageSize = 1000
	// MaxListPageSize is the largest page size a ListFiles call may ask
	// for; more is refused, as the other lists of the API do.
	MaxListPageSize = 10000
	// listPageBytes bounds the encoded entries of one page, far below
	// gRPC's default 4 MiB receive limit, however long the names and paths.
	listPageBytes = 2 << 20
)

// ListPageSize checks a ListFilesRequest.page_size and returns the size to
// use.
func ListPageSize(n int32) (int, error) {
	switch {
	case n < 0 || n > MaxListPageSize:
		return 0, fmt.Errorf("must be between 0 and %d, got %d", MaxListPageSize, n)
	case n == 0:
		return DefaultListPageSize, nil
	}
	return int(n), nil
}

// A ListFiles page token is opaque to clients. It carries the last name of
// the page it ends (entries are sorted by name, so the next page starts
// after it, and entries added or removed meanwhile shift nothing) and a
// check over that name and the directory, so that a token sent for
// another directory, or altered, is refused rather than silently listing
// from somewhere else.
const listCheckLen = 12

// errForeignToken is a token this server did not issue.
var errForeignToken = errors.New("is not a token this server issued")

func listCheck(dir, last string) []byte {
	sum := sha256.Sum256([]byte("sandpod-list-files-v1\x00" + dir + "\x00" + last))
	return sum[:listCheckLen]
}

// EncodeListToken makes the token of a page of dir (its absolute path) that
// ended with the entry named last.
func EncodeListToken(dir, last string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte(last), listCheck(dir, last)...))
}

// CheckListToken checks only that token has the form of a token this
// server issues, for a caller that does not know which directory a path
// names (the bridge: a relative path is relative to the sandbox's
// workspace); the agent's DecodeListToken checks the rest.
func CheckListToken(token string) error {
	if token == "" {
		return nil
	}
	if b, err := base64.RawURLEncoding.Strict().DecodeString(token); err != nil || len(b) <= listCheckLen {
		return errForeignToken
	}
	return nil
}

// DecodeListToken returns the last name of the page that token ended;
// "" for no token. dir is the directory's absolute path.
func DecodeListToken(dir, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) <= listCheckLen {
		return "", errForeignToken
	}
	last, check := string(b[:len(b)-listCheckLen]), b[len(b)-listCheckLen:]
	if subtle.ConstantTimeCompare(check, listCheck(dir, last)) != 1 {
		return "", fmt.Errorf("is not a token this server issued for this directory (a token continues only the listing of the path that returned it); start again without page_token")
	}
	return last, nil
}
