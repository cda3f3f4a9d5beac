// Package pagetoken is the one paging of the API's lists (AIP-158): the
// page size a call asks for, and the opaque page token that continues a
// list. The bridge's lists and the agent's ListFiles use it, each with a
// domain of its own so that a token of one is never taken by the other.
//
// A token carries the last name of the page it ends (items are sorted by
// name, so the next page starts after it, and items added or removed
// meanwhile shift nothing) and a check over the domain, that name and the
// scope it was issued for (the method and its filters, or a directory), so
// that a token sent for another scope, or altered, is refused rather than
// silently continuing something else.
package pagetoken

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
)

// checkLen is the length of a token's check, in bytes.
const checkLen = 12

var (
	// ErrForeign is a token this server did not issue.
	ErrForeign = errors.New("is not a token this server issued")
	// ErrOtherScope is a token issued for another scope (another query,
	// another directory), or altered.
	ErrOtherScope = errors.New("is not a token this server issued for this request")
)

// Size is the page size to use for a call that asks for n: def for 0, n
// within 1..max, an error (to be reported on the page_size field) beyond.
func Size(n int32, def, max int) (int, error) {
	switch {
	case n < 0 || int(n) > max:
		return 0, fmt.Errorf("must be between 0 and %d, got %d", max, n)
	case n == 0:
		return def, nil
	}
	return int(n), nil
}

func check(domain, scope, last string) []byte {
	sum := sha256.Sum256([]byte(domain + "\x00" + scope + "\x00" + last))
	return sum[:checkLen]
}

// Encode makes the token that continues the list of scope after last.
func Encode(domain, scope, last string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte(last), check(domain, scope, last)...))
}

// split is a token's last name and check, or ErrForeign.
func split(token string) (string, []byte, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) < checkLen {
		return "", nil, ErrForeign
	}
	return string(b[:len(b)-checkLen]), b[len(b)-checkLen:], nil
}

// CheckForm checks only that token has the form of a token (for a caller
// that cannot tell its scope); "" is no token.
func CheckForm(token string) error {
	if token == "" {
		return nil
	}
	_, _, err := split(token)
	return err
}

// Decode returns the last name of the page that token ended ("" for no
// token): ErrForeign for what is no token of this server, ErrOtherScope for
// one of another domain or scope, or altered.
func Decode(domain, scope, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	last, sum, err := split(token)
	if err != nil {
		return "", err
	}
	if subtle.ConstantTimeCompare(sum, check(domain, scope, last)) != 1 {
		return "", ErrOtherScope
	}
	return last, nil
}
