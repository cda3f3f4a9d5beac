package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// parseDuration reads a positive duration: Go's syntax (90s, 30m, 1h30m)
// plus whole days (2d).
func parseDuration(what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil && strings.HasSuffix(s, "d") {
		if n, nerr := strconv.Atoi(strings.TrimSuffix(s, "d")); nerr == nil && n > 0 && n <= 3650 {
			d, err = time.Duration(n)*24*time.Hour, nil
		}
	}
	if err != nil {
		return 0, usageErrorf("%s: %q is not a duration: use a number with a unit, such as 90s, 30m, 2h, 1h30m or 7d", what, s)
	}
	if d <= 0 {
		return 0, usageErrorf("%s: %q: the duration must be positive", what, s)
	}
	return d, nil
}

// parsePort reads a TCP port, 1..65535.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, usageErrorf("port %q: a port is a number from 1 to 65535", s)
	}
	return n, nil
}

// parsePairs reads KEY=VALUE arguments (--env, --label).
func parsePairs(flag string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--%s %q: write KEY=VALUE", flag, p)
		}
		out[k] = v
	}
	return out, nil
}

// exactArgs is cobra.ExactArgs with the CLI's usage error and the names of
// the arguments in the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		return usageErrorf("%s takes %s (got %d argument%s)", cmd.Name(), strings.Join(names, " "), len(args), plural(len(args)))
	}
}

// minArgs requires at least n arguments, described by what.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= n {
			return nil
		}
		return usageErrorf("%s takes %s", cmd.Name(), what)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
