package pagetoken

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestSize(t *testing.T) {
	cases := map[string]struct {
		n       int32
		want    int
		wantErr bool
	}{
		"none asked: the default": {0, 100, false},
		"one":                     {1, 1, false},
		"the largest":             {1000, 1000, false},
		"over the largest":        {1001, 0, true},
		"negative":                {-1, 0, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Size(tc.n, 100, 1000)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("Size(%d) = %d, %v; want %d, error %v", tc.n, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "must be between 0 and 1000, got") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	good := Encode("d", "scope", "item-7")
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	raw[0] ^= 1
	cases := map[string]struct {
		domain, scope, token string
		want                 string
		wantErr              error
	}{
		"no token":               {"d", "scope", "", "", nil},
		"its own":                {"d", "scope", good, "item-7", nil},
		"another scope":          {"d", "other", good, "", ErrOtherScope},
		"another domain":         {"e", "scope", good, "", ErrOtherScope},
		"altered":                {"d", "scope", base64.RawURLEncoding.EncodeToString(raw), "", ErrOtherScope},
		"not base64":             {"d", "scope", "garbage!", "", ErrForeign},
		"padded base64":          {"d", "scope", good + "==", "", ErrForeign},
		"too short":              {"d", "scope", "AAAA", "", ErrForeign},
		"a wrong check, no name": {"d", "scope", base64.RawURLEncoding.EncodeToString(make([]byte, checkLen)), "", ErrOtherScope},
		"its own, no name":       {"d", "scope", Encode("d", "scope", ""), "", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(tc.domain, tc.scope, tc.token)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Fatalf("Decode = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
			if form := CheckForm(tc.token); tc.wantErr == ErrForeign != errors.Is(form, ErrForeign) {
				t.Errorf("CheckForm = %v", form)
			}
		})
	}
}
