package main

import (
	"encoding/xml"
	"fmt"
	"io"
)

// junitReport is the part of pytest's --junitxml report the check reads.
type junitReport struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Tests int         `xml:"tests,attr"`
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitSkips reads a pytest junit report and returns its skips and how
// many test cases it holds. A test module skipped as a whole (an
// importorskip at module level) has an empty classname and the module as
// its name. An expected failure (xfail) counts as a skip: it proves
// nothing either.
func junitSkips(r io.Reader) ([]skip, int, error) {
	var rep junitReport
	if err := xml.NewDecoder(r).Decode(&rep); err != nil {
		return nil, 0, fmt.Errorf("junit report: %w", err)
	}
	var skips []skip
	n := 0
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			n++
			if c.Skipped == nil {
				continue
			}
			suite := c.Classname
			if suite == "" {
				suite = "-"
			}
			skips = append(skips, skip{Key: skipKey{suite, c.Name}, Reason: c.Skipped.Message + " " + c.Skipped.Text})
		}
	}
	return skips, n, nil
}
