// Package check holds the edge checks that the bridge and its previews
// (bridge/preview) both make of a request: names, and the first error of
// several checks.
package check

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// Quote quotes a caller's value for a message, cut to its first 64 bytes:
// an error must not echo megabytes back.
func Quote(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:64]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// Name checks a sandbox, template or pool name: a DNS-1123 label.
func Name(field, name string, required bool) error {
	if name == "" {
		if required {
			return errinfo.Invalid(errinfo.ReasonInvalidName, field, "is required")
		}
		return nil
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return errinfo.Invalid(errinfo.ReasonInvalidName, field, "%s is not a valid name: %s", Quote(name), strings.Join(errs, "; "))
	}
	return nil
}

// Namespace checks a namespace; "" is the default one.
func Namespace(ns string) error { return Name("namespace", ns, false) }

// First is the first error of errs that is not nil.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
