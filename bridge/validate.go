package bridge

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Bounds checked at the edge.
const (
	MaxTTL          = 366 * 24 * time.Hour
	MaxRequestIDLen = 128
	MaxPageSize     = 1000
	DefaultPageSize = 100
	MaxReplicas     = 10000
	MaxEnvVars      = 256
	MaxEnvValueLen  = 128 << 10
	MaxLabels       = 64
)

func invalid(field, format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "%s: %s", field, fmt.Sprintf(format, args...))
}

// checkName checks a sandbox, template or pool name: a DNS-1123 label.
func checkName(field, name string, required bool) error {
	if name == "" {
		if required {
			return invalid(field, "is required")
		}
		return nil
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return invalid(field, "%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

func checkNamespace(ns string) error { return checkName("namespace", ns, false) }

func checkLabels(field string, m map[string]string) error {
	if len(m) > MaxLabels {
		return invalid(field, "%d labels, the limit is %d", len(m), MaxLabels)
	}
	for k, v := range m {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return invalid(field, "key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return invalid(field, "value %q of %q: %s", v, k, strings.Join(errs, "; "))
		}
	}
	return nil
}

func checkEnv(field string, m map[string]string) error {
	if len(m) > MaxEnvVars {
		return invalid(field, "%d variables, the limit is %d", len(m), MaxEnvVars)
	}
	for k, v := range m {
		if !isEnvName(k) {
			return invalid(field, "%q is not a valid variable name (letters, digits and '_', not starting with a digit)", k)
		}
		if strings.HasPrefix(k, "SANDPOD_") {
			return invalid(field, "%q: names starting with SANDPOD_ are reserved", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return invalid(field, "value of %s contains a NUL byte", k)
		}
		if len(v) > MaxEnvValueLen {
			return invalid(field, "value of %s is %d bytes, the limit is %d", k, len(v), MaxEnvValueLen)
		}
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
		return invalid("request_id", "is %d characters, the limit is %d", len(id), MaxRequestIDLen)
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return invalid("request_id", "must be printable ASCII without spaces")
		}
	}
	return nil
}

// checkLifetime checks a ttl / shutdown_time pair.
func checkLifetime(ttl *durationpb.Duration, shutdown *timestamppb.Timestamp, now time.Time) error {
	if ttl != nil && shutdown != nil {
		return invalid("ttl", "give either ttl or shutdown_time, not both")
	}
	if ttl != nil {
		if err := ttl.CheckValid(); err != nil {
			return invalid("ttl", "%v", err)
		}
		d := ttl.AsDuration()
		if d <= 0 {
			return invalid("ttl", "must be positive, got %s", d)
		}
		if d > MaxTTL {
			return invalid("ttl", "%s is longer than the limit of %s", d, MaxTTL)
		}
	}
	if shutdown != nil {
		if err := shutdown.CheckValid(); err != nil {
			return invalid("shutdown_time", "%v", err)
		}
		t := shutdown.AsTime()
		if !t.After(now) {
			return invalid("shutdown_time", "%s is not in the future", t.Format(time.RFC3339))
		}
		if t.Sub(now) > MaxTTL {
			return invalid("shutdown_time", "is more than %s away", MaxTTL)
		}
	}
	return nil
}

func parseSelector(s string) (labels.Selector, error) {
	if s == "" {
		return labels.Everything(), nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, invalid("label_selector", "%v", err)
	}
	return sel, nil
}

func pageSize(n int32) (int, error) {
	switch {
	case n < 0 || n > MaxPageSize:
		return 0, invalid("page_size", "must be between 0 and %d, got %d", MaxPageSize, n)
	case n == 0:
		return DefaultPageSize, nil
	}
	return int(n), nil
}

// Page tokens are opaque to clients: the last name of the previous page.
func encodePageToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("after:" + last))
}

func decodePageToken(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !strings.HasPrefix(string(b), "after:") {
		return "", invalid("page_token", "is not a token this server issued")
	}
	return strings.TrimPrefix(string(b), "after:"), nil
}

// page returns the items after the token's name, and the next token.
func page[T any](items []T, nameOf func(T) string, size int, token string) ([]T, string, error) {
	after, err := decodePageToken(token)
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
		next = encodePageToken(nameOf(items[end-1]))
	}
	return items[start:end], next, nil
}
