package patch

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

type status struct {
	Phase   string   `json:"phase,omitempty"`
	Message string   `json:"message,omitempty"`
	IPs     []string `json:"ips,omitempty"`
}

func TestStatus(t *testing.T) {
	cases := map[string]struct {
		old, new status
		want     string
	}{
		"a field changes": {old: status{Phase: "Pending"}, new: status{Phase: "Running"}, want: `{"status":{"phase":"Running"}}`},
		"a field goes":    {old: status{Phase: "Pending", Message: "x"}, new: status{Phase: "Pending"}, want: `{"status":{"message":null}}`},
		"a list changes":  {old: status{IPs: []string{"a"}}, new: status{IPs: []string{"a", "b"}}, want: `{"status":{"ips":["a","b"]}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Status(tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := p.Data(nil); string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParts(t *testing.T) {
	type parts struct {
		Metadata struct {
			Labels map[string]string `json:"labels,omitempty"`
		} `json:"metadata"`
	}
	var old, new parts
	old.Metadata.Labels = map[string]string{"pool": "p", "keep": "k"}
	new.Metadata.Labels = map[string]string{"claim": "c", "keep": "k"}
	p, err := Parts(old, new, "42")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"labels":{"claim":"c","pool":null},"resourceVersion":"42"}}`
	if got, _ := p.Data(nil); string(got) != want || p.Type() != client.Merge.Type() {
		t.Errorf("got %s (%s), want %s", got, p.Type(), want)
	}
}
