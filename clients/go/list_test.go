package sandpod

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestListPages(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	var names []string
	for sb, err := range c.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sb.Name())
	}
	if got := strings.Join(names, ""); got != "abcdef" {
		t.Errorf("names = %q", got)
	}
	// Breaking out early stops paging.
	before := f.count("list")
	for range c.List(context.Background()) {
		break
	}
	if n := f.count("list") - before; n != 1 {
		t.Errorf("pages fetched after break = %d", n)
	}
	page, next, err := c.ListPage(context.Background(), WithPageToken("2"))
	if err != nil || len(page) != 2 || page[0].Name() != "c" || next != "4" {
		t.Errorf("ListPage = %v %q %v", page, next, err)
	}
}

func TestListYieldsErrorOnce(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	f.failNext("list", codes.PermissionDenied)
	n := 0
	for _, err := range c.List(context.Background()) {
		n++
		if !errors.Is(err, ErrPermissionDenied) {
			t.Errorf("err = %v", err)
		}
	}
	if n != 1 {
		t.Errorf("yields = %d", n)
	}
}
