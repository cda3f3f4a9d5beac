package bridge

import (
	"errors"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandpod/sandpod/bridge/check"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/pagetoken"
)

// Bounds checked at the edge.
const (
	MaxTTL          = 366 * 24 * time.Hour
	MaxRequestIDLen = 128
	MaxPageSize     = 1000
	DefaultPageSize = 100
	MaxReplicas     = 10000
	MaxEnvVars      = 256
	MaxLabels       = 64
	// MaxArgLen bounds one argument, the shell command, and one NAME=value
	// of the environment: the kernel refuses longer ones (MAX_ARG_STRLEN,
	// 128 KiB with the terminating NUL), so every exec would fail.
	MaxArgLen = 128<<10 - 1
	// MaxEnvBytes bounds the NAME=value pairs of one request, leaving room
	// in the kernel's space for arguments and environment (about 2 MiB).
	MaxEnvBytes = 1 << 20
	// MaxSelectorLen bounds a label selector.
	MaxSelectorLen = 16 << 10
	// ReservedLabelPrefix marks labels sandpod sets itself.
	ReservedLabelPrefix = "sandpod.dev/"
)

// invalid is the INVALID_ARGUMENT of a field: its reason says which rule
// the field broke, the field is in the ErrorInfo metadata and starts the
// message.
func invalid(reason errinfo.Why, field, format string, args ...any) error {
	return errinfo.Invalid(reason, field, format, args...)
}

// The name checks and quote are bridge/check's, shared with the previews.
var (
	quote          = check.Quote
	checkName      = check.Name
	checkNamespace = check.Namespace
)

func checkLabels(field string, m map[string]string) error {
	if len(m) > MaxLabels {
		return invalid(errinfo.ReasonInvalidLabels, field, "%d labels, the limit is %d", len(m), MaxLabels)
	}
	for k, v := range m {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return invalid(errinfo.ReasonInvalidLabels, field, "key %s: %s", quote(k), strings.Join(errs, "; "))
		}
		if strings.HasPrefix(k, ReservedLabelPrefix) {
			return invalid(errinfo.ReasonInvalidLabels, field, "key %s: keys under %s are reserved for sandpod", quote(k), ReservedLabelPrefix)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return invalid(errinfo.ReasonInvalidLabels, field, "value %s of %s: %s", quote(v), quote(k), strings.Join(errs, "; "))
		}
	}
	return nil
}

func checkEnv(field string, m map[string]string) error {
	if len(m) > MaxEnvVars {
		return invalid(errinfo.ReasonInvalidEnv, field, "%d variables, the limit is %d", len(m), MaxEnvVars)
	}
	total := 0
	for k, v := range m {
		if !isEnvName(k) {
			return invalid(errinfo.ReasonInvalidEnv, field, "%s is not a valid variable name (letters, digits and '_' up to 256, not starting with a digit)", quote(k))
		}
		if strings.HasPrefix(k, "SANDPOD_") {
			return invalid(errinfo.ReasonInvalidEnv, field, "%q: names starting with SANDPOD_ are reserved", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return invalid(errinfo.ReasonInvalidEnv, field, "value of %s contains a NUL byte", k)
		}
		if n := len(k) + 1 + len(v); n > MaxArgLen {
			return invalid(errinfo.ReasonInvalidEnv, field, "%s=value is %d bytes, the limit is %d (the kernel's limit for one variable); pass large data in a file", k, n, MaxArgLen)
		}
		total += len(k) + 1 + len(v)
	}
	if total > MaxEnvBytes {
		return invalid(errinfo.ReasonInvalidEnv, field, "%d bytes of NAME=value in all, the limit is %d; pass large data in a file", total, MaxEnvBytes)
	}
	return nil
}

func isEnvName(k string) bool {
	if k == "" || len(k) > 256 || unicode.IsDigit(rune(k[0])) {
		return false
	}
	for _, c := range k {
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func checkRequestID(id string) error {
	if len(id) > MaxRequestIDLen {
		return invalid(errinfo.ReasonInvalidRequestID, "request_id", "is %d characters, the limit is %d", len(id), MaxRequestIDLen)
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return invalid(errinfo.ReasonInvalidRequestID, "request_id", "must be printable ASCII without spaces")
		}
	}
	return nil
}

// checkLifetime checks a ttl / shutdown_time pair.
func checkLifetime(ttl *durationpb.Duration, shutdown *timestamppb.Timestamp, now time.Time) error {
	if ttl != nil && shutdown != nil {
		return invalid(errinfo.ReasonInvalidLifetime, "ttl", "give either ttl or shutdown_time, not both")
	}
	if ttl != nil {
		if err := ttl.CheckValid(); err != nil {
			return invalid(errinfo.ReasonInvalidLifetime, "ttl", "%v", err)
		}
		d := ttl.AsDuration()
		if d <= 0 {
			return invalid(errinfo.ReasonInvalidLifetime, "ttl", "must be positive, got %s", d)
		}
		if d > MaxTTL {
			return invalid(errinfo.ReasonInvalidLifetime, "ttl", "%s is longer than the limit of %s", d, MaxTTL)
		}
	}
	if shutdown != nil {
		if err := shutdown.CheckValid(); err != nil {
			return invalid(errinfo.ReasonInvalidLifetime, "shutdown_time", "%v", err)
		}
		t := shutdown.AsTime()
		if !t.After(now) {
			return invalid(errinfo.ReasonInvalidLifetime, "shutdown_time", "%s is not in the future", t.Format(time.RFC3339))
		}
		if t.Sub(now) > MaxTTL {
			return invalid(errinfo.ReasonInvalidLifetime, "shutdown_time", "is more than %s away", MaxTTL)
		}
	}
	return nil
}

func parseSelector(s string) (labels.Selector, error) {
	if s == "" {
		return labels.Everything(), nil
	}
	if len(s) > MaxSelectorLen {
		return nil, invalid(errinfo.ReasonInvalidSelector, "label_selector", "is %d bytes, the limit is %d", len(s), MaxSelectorLen)
	}
	sel, err := labels.Parse(s)
	if err != nil {
		msg := err.Error() // it may quote the whole selector
		if len(msg) > 400 {
			msg = msg[:200] + " … " + msg[len(msg)-200:]
		}
		return nil, invalid(errinfo.ReasonInvalidSelector, "label_selector", "%s", msg)
	}
	return sel, nil
}

func pageSize(n int32) (int, error) {
	size, err := pagetoken.Size(n, DefaultPageSize, MaxPageSize)
	if err != nil {
		return 0, invalid(errinfo.ReasonInvalidPage, "page_size", "%v", err)
	}
	return size, nil
}

// Page tokens are the API's one paging (core/api/pagetoken): bound to the
// query they were issued for (the method and its filters, not the page
// size), so that a token sent with another query, or altered, is refused
// rather than silently continuing something else (AIP-158).
const pageDomain = "sandpod-page-v1"

// pageQuery names a paged query: the method, the namespace and the filters.
func pageQuery(method, namespace string, filters ...string) string {
	if namespace == "" {
		namespace = "default"
	}
	return strings.Join(append([]string{method, namespace}, filters...), "\x00")
}

func encodePageToken(query, last string) string {
	return pagetoken.Encode(pageDomain, query, last)
}

func decodePageToken(query, tok string) (string, error) {
	last, err := pagetoken.Decode(pageDomain, query, tok)
	switch {
	case errors.Is(err, pagetoken.ErrForeign):
		return "", invalid(errinfo.ReasonInvalidPage, "page_token", "is not a token this server issued")
	case err != nil:
		return "", invalid(errinfo.ReasonInvalidPage, "page_token", "is not a token this server issued for this request: a token continues only "+
			"the list that returned it, with the same namespace and filters (label_selector, include_pool_members); "+
			"start again without page_token")
	}
	return last, nil
}

// pageRequest is a checked page of a list call: its size, and the query its
// tokens continue.
type pageRequest struct {
	size         int
	query, token string
}

// newPage checks the page size and token of a list call, whose query is the
// method, namespace and filters: the one prelude of every paged list.
func newPage(method, namespace string, size int32, token string, filters ...string) (pageRequest, error) {
	n, err := pageSize(size)
	if err != nil {
		return pageRequest{}, err
	}
	query := pageQuery(method, namespace, filters...)
	if _, err := decodePageToken(query, token); err != nil {
		return pageRequest{}, err
	}
	return pageRequest{size: n, query: query, token: token}, nil
}

// pageOf returns the page p of items (sorted by nameOf), and the next token.
func pageOf[T any](p pageRequest, items []T, nameOf func(T) string) ([]T, string, error) {
	return page(items, nameOf, p.size, p.query, p.token)
}

// page returns the items after the token's name, and the next token.
func page[T any](items []T, nameOf func(T) string, size int, query, token string) ([]T, string, error) {
	after, err := decodePageToken(query, token)
	if err != nil {
		return nil, "", err
	}
	start := 0
	if after != "" {
		for start < len(items) && nameOf(items[start]) <= after {
			start++
		}
	}
	end := min(start+size, len(items))
	next := ""
	if end < len(items) {
		next = encodePageToken(query, nameOf(items[end-1]))
	}
	return items[start:end], next, nil
}

// MaxForks bounds the sandboxes of one ForkSandbox call.
const MaxForks = 256

// checkForkSource: a fork names exactly one of a snapshot and a sandbox.
func checkForkSource(snapshot, sandbox string) error {
	switch {
	case snapshot == "" && sandbox == "":
		return invalid(errinfo.ReasonInvalidForkSource, "snapshot", "name a snapshot or a sandbox to fork from")
	case snapshot != "" && sandbox != "":
		return invalid(errinfo.ReasonInvalidForkSource, "sandbox", "name a snapshot or a sandbox to fork from, not both")
	case snapshot != "":
		return checkName("snapshot", snapshot, true)
	}
	return checkName("sandbox", sandbox, true)
}

func checkForkCount(n int32) error {
	if n < 1 || n > MaxForks {
		return invalid(errinfo.ReasonInvalidValue, "count", "must be between 1 and %d, got %d", MaxForks, n)
	}
	return nil
}
