// Command skipcheck fails a test run that skipped a test its allowlist
// (hack/test/skips.allow) does not name. `make test` runs every suite
// through it; a developer's own `go test ./...` may still skip.
//
//	go test -json ./... | skipcheck go [-v] [-allow FILE]
//	    prints the run as go test would (-v: as go test -v would) and exits
//	    non-zero when a test failed, the run printed no event, or a test
//	    skipped that the allowlist does not name;
//	skipcheck junit [-allow FILE] REPORT.xml...
//	    the same for pytest --junitxml reports (pytest exits 0 when every
//	    test skips).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	allowPath := fs.String("allow", "hack/test/skips.allow", "the allowlist")
	verbose := fs.Bool("v", false, "print every line of the run (go test -v)")
	_ = fs.Parse(os.Args[2:])
	f, err := os.Open(*allowPath)
	if err != nil {
		fatal(err)
	}
	al, err := parseAllowlist(f)
	f.Close()
	if err != nil {
		fatal(fmt.Errorf("%s: %w", *allowPath, err))
	}
	switch os.Args[1] {
	case "go":
		res, err := goStream(os.Stdin, os.Stdout, *verbose)
		if err != nil {
			fatal(err)
		}
		ok := report(os.Stdout, "go test", res.Skips, al, *allowPath)
		if res.Events == 0 {
			fmt.Println("FAIL: go test printed no test event (did it start?)")
			ok = false
		}
		if !ok || res.Failed {
			os.Exit(1)
		}
	case "junit":
		if fs.NArg() == 0 {
			usage()
		}
		ok := true
		for _, p := range fs.Args() {
			f, err := os.Open(p)
			if err != nil {
				fatal(err)
			}
			skips, n, err := junitSkips(f)
			f.Close()
			if err != nil {
				fatal(fmt.Errorf("%s: %w", p, err))
			}
			if n == 0 {
				fmt.Printf("FAIL: %s holds no test\n", p)
				ok = false
			}
			ok = report(os.Stdout, "pytest ("+p+")", skips, al, *allowPath) && ok
		}
		if !ok {
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go test -json ... | skipcheck go [-v] [-allow FILE]\n       skipcheck junit [-allow FILE] REPORT.xml...")
	os.Exit(2)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "skipcheck:", err)
	os.Exit(2)
}
