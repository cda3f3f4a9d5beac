package agent

import (
	"errors"
	"fmt"

	"github.com/sandpod/sandpod/core/api/pagetoken"
)

// ListFiles pages (AIP-158), in the API's one paging (core/api/pagetoken).
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
	// listDomain keeps ListFiles tokens apart from the bridge's list
	// tokens. A token is bound to the directory's absolute path.
	listDomain = "sandpod-list-files-v1"
)

// ListPageSize checks a ListFilesRequest.page_size and returns the size to
// use.
func ListPageSize(n int32) (int, error) {
	return pagetoken.Size(n, DefaultListPageSize, MaxListPageSize)
}

// EncodeListToken makes the token of a page of dir (its absolute path) that
// ended with the entry named last.
func EncodeListToken(dir, last string) string {
	return pagetoken.Encode(listDomain, dir, last)
}

// CheckListToken checks only that token has the form of a token this
// server issues, for a caller that does not know which directory a path
// names (the bridge: a relative path is relative to the sandbox's
// workspace); the agent's DecodeListToken checks the rest.
func CheckListToken(token string) error {
	return pagetoken.CheckForm(token)
}

// DecodeListToken returns the last name of the page that token ended;
// "" for no token. dir is the directory's absolute path.
func DecodeListToken(dir, token string) (string, error) {
	last, err := pagetoken.Decode(listDomain, dir, token)
	if errors.Is(err, pagetoken.ErrOtherScope) {
		return "", fmt.Errorf("is not a token this server issued for this directory (a token continues only the listing of the path that returned it); start again without page_token")
	}
	return last, err
}
