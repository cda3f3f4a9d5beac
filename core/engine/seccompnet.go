package engine

import specs "github.com/opencontainers/runtime-spec/specs-go"

// Socket address families a sandbox may open. Each is kept inside the
// sandbox's own network namespace by the kernel; every other family is
// refused by the seccomp filter (socketRules).
const (
	afUnix    = 1  // path and abstract sockets: the sandbox's mount and network namespaces
	afInet    = 2  // the sandbox's own interfaces (loopback, pasta's tap)
	afInet6   = 10 // as afInet
	afNetlink = 16 // per network namespace; host-wide protocols (audit, proc connector) need capabilities in the host's
)

// afMax is one past the highest family Linux defines (AF_MCTP is 45).
// Families from it up are refused too: a kernel that adds one is not
// trusted with it before someone has looked.
const afMax = 46

// deniedFamilies says why each family the kernel knows (by number) is
// refused. The test for the list is TestSocketRulesRefuseWhatIsNotNamespaced.
var deniedFamilies = map[uint64]string{
	0:  "AF_UNSPEC: no socket of its own",
	3:  "AF_AX25: amateur radio on the host's devices; no sandbox program needs it",
	4:  "AF_IPX: as AF_AX25",
	5:  "AF_APPLETALK: as AF_AX25",
	6:  "AF_NETROM: as AF_AX25",
	7:  "AF_BRIDGE: no sockets; refused with the rest",
	8:  "AF_ATMPVC: host ATM devices",
	9:  "AF_X25: as AF_AX25",
	11: "AF_ROSE: as AF_AX25",
	12: "AF_DECnet: gone from Linux; refused with the rest",
	13: "AF_NETBEUI: gone from Linux",
	14: "AF_SECURITY: no sockets",
	15: "AF_KEY: the IPsec key store; needs CAP_NET_ADMIN, no sandbox program needs it",
	17: "AF_PACKET: raw frames; needs CAP_NET_RAW, which no sandbox process holds",
	18: "AF_ASH: gone from Linux",
	19: "AF_ECONET: gone from Linux",
	20: "AF_ATMSVC: host ATM devices",
	21: "AF_RDS: reliable datagrams over the host's RDMA and TCP transports; a long list of kernel flaws",
	22: "AF_SNA: gone from Linux",
	23: "AF_IRDA: gone from Linux",
	24: "AF_PPPOX: PPP over the host's devices (L2TP, PPTP); needs CAP_NET_ADMIN",
	25: "AF_WANPIPE: gone from Linux",
	26: "AF_LLC: 802.2 on the host's devices",
	27: "AF_IB: InfiniBand, the host's devices",
	28: "AF_MPLS: no sockets",
	29: "AF_CAN: CAN buses of the host",
	30: "AF_TIPC: a cluster protocol that loads a module on first use",
	31: "AF_BLUETOOTH: the host's Bluetooth devices, not namespaced",
	32: "AF_IUCV: s390 hypervisor communication",
	33: "AF_RXRPC: AFS's RPC, kernel keyring bound",
	34: "AF_ISDN: the host's ISDN devices",
	35: "AF_PHONET: the host's modems",
	36: "AF_IEEE802154: the host's low-power radios",
	37: "AF_CAIF: the host's modems",
	38: "AF_ALG: the host kernel's crypto API; not a network, but a large kernel surface no sandbox program needs (user-space crypto does not use it)",
	39: "AF_NFC: the host's NFC devices, not namespaced",
	40: "AF_VSOCK: the VM's sockets to its hypervisor and host, not namespaced: a sandbox could bind the machine's ports and talk to the hypervisor",
	41: "AF_KCM: a kernel multiplexor on TCP with a history of kernel flaws",
	42: "AF_QIPCRTR: Qualcomm's IPC router, host-wide",
	43: "AF_SMC: RDMA shared-memory sockets on the host's devices",
	44: "AF_XDP: raw frames of the host's devices; needs CAP_NET_RAW",
	45: "AF_MCTP: the host's management buses",
}

// errnoAFNoSupport is what a refused socket family gets: the answer of a
// kernel built without it, which programs handle.
var errnoAFNoSupport = func() *uint { e := uint(97); return &e }()

// socketRules refuse socket(2) and socketpair(2) for every family but
// afUnix, afInet, afInet6 and afNetlink (one equality rule per family,
// which runc adds as separate rules, and one for afMax and above, which
// also catches a family with bits set above the 32 the kernel reads).
// socketcall(2), 32-bit x86's multiplexer, hides the family behind a
// pointer the filter cannot follow: its socket and socketpair calls are
// refused, so a 32-bit x86 program opens sockets through the direct calls
// (which the filter checks) or not at all.
func socketRules() []specs.LinuxSyscall {
	var args []specs.LinuxSeccompArg
	for f := uint64(0); f < afMax; f++ {
		if _, ok := deniedFamilies[f]; ok {
			args = append(args, specs.LinuxSeccompArg{Index: 0, Value: f, Op: specs.OpEqualTo})
		}
	}
	args = append(args, specs.LinuxSeccompArg{Index: 0, Value: afMax, Op: specs.OpGreaterEqual})
	const sysSocket, sysSocketpair = 1, 8 // socketcall's call numbers
	return []specs.LinuxSyscall{
		{Names: []string{"socket", "socketpair"}, Action: specs.ActErrno, ErrnoRet: errnoAFNoSupport, Args: args},
		{Names: []string{"socketcall"}, Action: specs.ActErrno, ErrnoRet: errnoAFNoSupport, Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: sysSocket, Op: specs.OpEqualTo}, {Index: 0, Value: sysSocketpair, Op: specs.OpEqualTo},
		}},
	}
}
