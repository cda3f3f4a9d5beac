package engine

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
)

// pasta's sockets are the host network namespace's: a connection the
// sandbox opens to any address of the host itself (its IPv4 and IPv6
// addresses on every interface, link-local ones with their scope, and
// loopback) would reach the host's services bound to 0.0.0.0 or [::]. No
// pasta option closes that (--no-map-gw covers only the gateway), so the
// host's packet filter does: one rule in the OUTPUT chain, for IPv4 and
// IPv6, refuses what a socket owned by any sandbox's id (every sandbox's
// pasta runs as its sandbox's root, a host id in the engine's id ranges, from firstIDBase)
// sends to an address of the host (addrtype LOCAL, which follows the
// host's addresses as they change), or to a broadcast or multicast
// address, which the host's own listeners (mDNS, SSDP, a DHCP server)
// receive too. Nothing else of the host is matched:
// no process of the host runs as those ids, and a sandbox's own sockets
// live in its own network namespace.
//
// The rule is added once per serve, only if missing, and left in place
// when serve exits: other engines on the host may rely on it, and it
// matches nothing while no sandbox runs.

// hostRuleComment tells an operator reading `iptables -S` whose rule it is.
const hostRuleComment = "sandpod: sandboxes (their pasta) may not reach the host's own addresses"

// hostRule is the rule's specification for iptables or ip6tables (IPv6
// has no broadcast).
func hostRule(tool string) []string {
	types := "LOCAL,BROADCAST,MULTICAST"
	if tool == "ip6tables" {
		types = "LOCAL,MULTICAST"
	}
	return []string{
		"-m", "owner", "--uid-owner", strconv.Itoa(firstIDBase) + "-" + strconv.Itoa(firstIDBase+idRanges*idRangeSize-1),
		"-m", "addrtype", "--dst-type", types,
		"-m", "comment", "--comment", hostRuleComment,
		"-j", "REJECT",
	}
}

// ruleCommands are the commands that make sure the rule is in tool's
// OUTPUT chain: a check (-C) and, if it fails, an insert at the top.
func ruleCommands(tool string) (check, insert []string) {
	check = append([]string{tool, "-w", "-C", "OUTPUT"}, hostRule(tool)...)
	insert = append([]string{tool, "-w", "-I", "OUTPUT", "1"}, hostRule(tool)...)
	return check, insert
}

type onceFilter struct {
	mu   sync.Mutex
	done bool
}

// hostFilter is the host rule of this process: in place before the first
// pasta starts.
var hostFilter onceFilter

// ensure adds the rule for IPv4 and IPv6 if it is missing. Without it no
// sandbox with egress starts: the host's services would be open to it.
func (f *onceFilter) ensure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return nil
	}
	for _, tool := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("egress: Internet needs %s (Debian package iptables) to keep sandboxes off the host's own addresses; `make build` installs it when run as root; or use egress: None", tool)
		}
		check, insert := ruleCommands(tool)
		if exec.Command(check[0], check[1:]...).Run() == nil {
			continue
		}
		var out bytes.Buffer
		cmd := exec.Command(insert[0], insert[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("egress: Internet: %s could not add the rule that keeps sandboxes off the host's own addresses (%w): %s", tool, err, bytes.TrimSpace(out.Bytes()))
		}
	}
	f.done = true
	return nil
}
