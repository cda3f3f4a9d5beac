// Command sandpod-csi-hostpath is the node bed's CSI driver: volumes are
// directories under one root on the node, snapshots are copies of them, and
// a volume made from a snapshot starts as a copy of it. It serves the CSI
// identity, controller and node services on one unix socket (for the
// external-provisioner, the external-snapshotter's csi-snapshotter and
// kubelet) and kubelet's plugin registration on a second one, in kubelet's
// plugins_registry (no node-driver-registrar).
//
// It exists because the kubernetes-csi hostpath driver and node-driver-
// registrar are not served by the Go module proxy this bed builds from; it
// does what a single-node test bed needs of them and nothing more: one node,
// filesystem volumes, no capacity accounting, no staging. Test bed only: it
// runs as root on the host.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var (
	flagEndpoint = flag.String("endpoint", "", "the CSI socket (a path)")
	flagRegister = flag.String("registration-socket", "", "kubelet's registration socket to serve (<kubelet root>/plugins_registry/<driver>-reg.sock)")
	flagName     = flag.String("drivername", "hostpath.csi.sandpod.dev", "the driver's name")
	flagNode     = flag.String("nodeid", "", "this node's name")
	flagRoot     = flag.String("root", "", "directory holding volumes/ and snapshots/")
)

const version = "0.1.0"

// ids are names the sidecars make (pvc-<uid>, snapshot-<uid>): nothing that
// could leave the root.
var idRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$`)

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	registerapi.UnimplementedRegistrationServer
	mu sync.Mutex // one create or delete at a time: copies are not atomic
}

func (d *driver) vol(id string) string  { return filepath.Join(*flagRoot, "volumes", id) }
func (d *driver) snap(id string) string { return filepath.Join(*flagRoot, "snapshots", id) }

func checkID(what, id string) error {
	if !idRE.MatchString(id) {
		return status.Errorf(codes.InvalidArgument, "%s %q: not a valid id", what, id)
	}
	return nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// copyTree copies src's contents into the new directory dst (made via a
// temporary name, so a crash leaves no half copy under the final one).
func copyTree(src, dst string) error {
	tmp := dst + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", src+"/.", tmp+"/").CombinedOutput(); err != nil {
		return fmt.Errorf("cp: %v: %s", err, out)
	}
	// The top directory too: its mode (0777 for a new volume, whatever
	// the sandbox made it) and owner, not the umask's.
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if err := os.Lchown(tmp, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func sizeOf(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// --- identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: *flagName, VendorVersion: version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// --- controller

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	id := req.GetName()
	if err := checkID("volume", id); err != nil {
		return nil, err
	}
	for _, c := range req.GetVolumeCapabilities() {
		if c.GetBlock() != nil {
			return nil, status.Error(codes.InvalidArgument, "block volumes are not supported")
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := &csi.Volume{VolumeId: id, CapacityBytes: req.GetCapacityRange().GetRequiredBytes(), ContentSource: req.GetVolumeContentSource()}
	if exists(d.vol(id)) {
		return &csi.CreateVolumeResponse{Volume: out}, nil // a retry
	}
	src := ""
	if s := req.GetVolumeContentSource().GetSnapshot(); s != nil {
		if err := checkID("snapshot", s.GetSnapshotId()); err != nil {
			return nil, err
		}
		src = d.snap(s.GetSnapshotId())
	} else if v := req.GetVolumeContentSource().GetVolume(); v != nil {
		if err := checkID("volume", v.GetVolumeId()); err != nil {
			return nil, err
		}
		src = d.vol(v.GetVolumeId())
	}
	if src == "" {
		if err := os.MkdirAll(d.vol(id), 0o777); err != nil {
			return nil, status.Errorf(codes.Internal, "make volume: %v", err)
		}
		_ = os.Chmod(d.vol(id), 0o777) // a sandbox may run as any user
		log.Printf("created volume %s", id)
		return &csi.CreateVolumeResponse{Volume: out}, nil
	}
	if !exists(src) {
		return nil, status.Errorf(codes.NotFound, "source %s not found", filepath.Base(src))
	}
	if err := copyTree(src, d.vol(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s from %s: %v", id, filepath.Base(src), err)
	}
	log.Printf("created volume %s from %s", id, filepath.Base(src))
	return &csi.CreateVolumeResponse{Volume: out}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if err := checkID("volume", req.GetVolumeId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.RemoveAll(d.vol(req.GetVolumeId())); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume: %v", err)
	}
	log.Printf("deleted volume %s", req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := checkID("volume", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if !exists(d.vol(req.GetVolumeId())) {
		return nil, status.Error(codes.NotFound, "no such volume")
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	id, src := req.GetName(), req.GetSourceVolumeId()
	if err := checkID("snapshot", id); err != nil {
		return nil, err
	}
	if err := checkID("volume", src); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !exists(d.snap(id)) {
		if !exists(d.vol(src)) {
			return nil, status.Errorf(codes.NotFound, "volume %s not found", src)
		}
		if err := copyTree(d.vol(src), d.snap(id)); err != nil {
			return nil, status.Errorf(codes.Internal, "snapshot %s of %s: %v", id, src, err)
		}
		log.Printf("created snapshot %s of %s", id, src)
	}
	fi, _ := os.Stat(d.snap(id))
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
		SnapshotId: id, SourceVolumeId: src, SizeBytes: sizeOf(d.snap(id)),
		CreationTime: timestamppb.New(fi.ModTime()), ReadyToUse: true,
	}}, nil
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if err := checkID("snapshot", req.GetSnapshotId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.RemoveAll(d.snap(req.GetSnapshotId())); err != nil {
		return nil, status.Errorf(codes.Internal, "delete snapshot: %v", err)
	}
	log.Printf("deleted snapshot %s", req.GetSnapshotId())
	return &csi.DeleteSnapshotResponse{}, nil
}

// --- node

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: *flagNode}, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if err := checkID("volume", id); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "target_path must be absolute")
	}
	if !exists(d.vol(id)) {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	if mounted(target) {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target: %v", err)
	}
	if err := syscall.Mount(d.vol(id), target, "", syscall.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind mount: %v", err)
	}
	if req.GetReadonly() {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			_ = syscall.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "read-only remount: %v", err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "target_path must be absolute")
	}
	if mounted(target) {
		if err := syscall.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount: %v", err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove target: %v", err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// mounted says whether p is a mount point (in /proc/self/mountinfo).
func mounted(p string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.ReplaceAll(f[4], `\040`, " ") == p {
			return true
		}
	}
	return false
}

// --- kubelet plugin registration

func (d *driver) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: *flagName, Endpoint: *flagEndpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (d *driver) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.GetPluginRegistered() {
		log.Printf("kubelet refused the registration: %s", s.GetError())
	} else {
		log.Printf("registered with kubelet")
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	_ = os.Remove(path) // a socket left by a previous run
	return net.Listen("unix", path)
}

func main() {
	flag.Parse()
	if *flagEndpoint == "" || *flagNode == "" || *flagRoot == "" {
		log.Fatal("--endpoint, --nodeid and --root are required")
	}
	for _, dir := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(*flagRoot, dir), 0o700); err != nil {
			log.Fatal(err)
		}
	}
	d := &driver{}
	logCalls := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		t0 := time.Now()
		resp, err := h(ctx, req)
		if err != nil || !strings.Contains(info.FullMethod, "Identity") {
			log.Printf("%s %v (%s)", info.FullMethod, err, time.Since(t0).Round(time.Millisecond))
		}
		return resp, err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	lis, err := listen(*flagEndpoint)
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(srv.Serve(lis)) }()
	if *flagRegister != "" {
		reg := grpc.NewServer()
		registerapi.RegisterRegistrationServer(reg, d)
		rl, err := listen(*flagRegister)
		if err != nil {
			log.Fatal(err)
		}
		go func() { log.Fatal(reg.Serve(rl)) }()
	}
	log.Printf("%s %s serving %s", *flagName, version, *flagEndpoint)
	select {}
}
