package engine

import (
	"strings"
	"testing"
)

func TestCheckRuntimeClass(t *testing.T) {
	gvisor := map[string]bool{"gvisor": true}
	for name, c := range map[string]struct {
		class   string
		allowed map[string]bool
		want    string // in the error; "" for none
	}{
		"empty is runc":             {"", localRuntimeClasses, ""},
		"gvisor refused":            {"gvisor", localRuntimeClasses, `spec.runtimeClassName is "gvisor", which the local engine cannot honour: it runs only runc`},
		"kata refused":              {"kata", localRuntimeClasses, "the host's kernel"},
		"a class the engine runs":   {"gvisor", gvisor, ""},
		"another once one is known": {"kata", gvisor, "runc (runtimeClassName empty) or gvisor"},
	} {
		err := checkRuntimeClass("py", "spec.runtimeClassName", c.class, c.allowed)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "SandboxTemplate py")):
			t.Errorf("%s: error %v, want one containing %q and the template", name, err, c.want)
		}
	}
}

func TestTemplateWithRuntimeClassIsRefusedAtLoad(t *testing.T) {
	for field, yaml := range map[string]string{
		"spec.runtimeClassName":                  strings.Replace(tmpl, "  autoResume: true\n", "  autoResume: true\n  runtimeClassName: gvisor\n", 1),
		"spec.podTemplate.spec.runtimeClassName": strings.Replace(tmpl, "    spec:\n      containers:", "    spec:\n      runtimeClassName: gvisor\n      containers:", 1),
	} {
		_, err := ParseDefinitions("t", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), field+` is "gvisor"`) {
			t.Errorf("%s: ParseDefinitions error %v, want the field named", field, err)
		}
	}
	if _, err := ParseDefinitions("t", []byte(strings.Replace(tmpl, "  autoResume: true\n", "  autoResume: true\n  runtimeClassName: \"\"\n", 1))); err != nil {
		t.Errorf("empty runtimeClassName: %v", err)
	}
}
