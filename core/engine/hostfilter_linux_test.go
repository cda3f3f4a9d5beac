package engine

import (
	"strings"
	"testing"
)

func TestHostRuleCommands(t *testing.T) {
	for tool, want := range map[string][2]string{
		"iptables":  {"iptables -w -C OUTPUT -m owner --uid-owner 1073741824-2147483647 -m addrtype --dst-type LOCAL,BROADCAST,MULTICAST", "iptables -w -I OUTPUT 1 -m owner"},
		"ip6tables": {"ip6tables -w -C OUTPUT -m owner --uid-owner 1073741824-2147483647 -m addrtype --dst-type LOCAL,MULTICAST", "ip6tables -w -I OUTPUT 1 -m owner"},
	} {
		check, insert := ruleCommands(tool)
		c, i := strings.Join(check, " "), strings.Join(insert, " ")
		if !strings.HasPrefix(c, want[0]) || !strings.HasPrefix(i, want[1]) || !strings.HasSuffix(c, "-j REJECT") || !strings.HasSuffix(i, "-j REJECT") {
			t.Errorf("%s: check %q insert %q", tool, c, i)
		}
		if strings.Join(check[4:], " ") != strings.Join(insert[5:], " ") {
			t.Errorf("%s: the check and the insert name different rules", tool)
		}
	}
}
