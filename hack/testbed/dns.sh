# shellcheck shell=bash
# Sourced by hack/testbed/up.sh: cluster_dns runs the bed's cluster DNS.
#
# CoreDNS (hack/testbed/coredns.sh builds it from its Go module) runs as a
# Deployment in kube-system behind the Service kube-dns at 10.0.0.10, the
# kubelet's clusterDNS, the way clusters usually run it: it is a pod in
# kube-system serving port 53, which is what the managed NetworkPolicy of
# sandboxes lets them reach for DNS. Its image is made here (one static
# binary) and imported like the others. It answers only for the cluster
# domain and the reverse zones (no forward: nothing on the bed reaches
# outside addresses), so other names get REFUSED at once instead of a
# time-out.
#
# Uses up.sh's R, BIN, kc, log, die and import_images.

CLUSTER_DOMAIN=cluster.local   # the kubelet's clusterDomain (up.sh)
CLUSTER_DNS_IP=10.0.0.10

cluster_dns() {
  local bin ver ref y
  bin=$("$HERE/coredns.sh" --print)
  [ -x "$bin" ] || die "missing $bin: run hack/testbed/build.sh"
  ver=$(basename "$(dirname "$bin")")   # coredns-vX.Y.Z
  ref=sandpod.local/testbed/coredns:${ver#coredns-}
  # The image: the binary, made again only when the binary changed.
  if [ ! -f "$R/images/coredns.tar" ] || [ "$bin" -nt "$R/images/coredns.tar" ]; then
    local fs
    fs=$(mktemp -d)
    mkdir -p "$fs/etc"
    cp "$bin" "$fs/coredns"
    printf 'root:x:0:0:root:/root:/sbin/nologin\n' > "$fs/etc/passwd"
    "$HERE/mkimage.sh" "$fs" "$ref" "$R/images/coredns.tar" '["/coredns"]' '["-conf","/etc/coredns/Corefile"]' >/dev/null
    rm -rf "$fs"
  fi
  import_images
  y=$(mktemp)
  cat > "$y" <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    $CLUSTER_DOMAIN:53 in-addr.arpa:53 ip6.arpa:53 {
        errors
        health :8080
        ready :8181
        kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
            pods insecure
            ttl 5
        }
        cache 5
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
      annotations: {sandpod.dev/testbed-corefile: "$(printf '%s' "$CLUSTER_DOMAIN" | sha256sum | cut -c1-12)"}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default           # not itself
      priorityClassName: system-cluster-critical
      containers:
      - name: coredns
        image: $ref
        imagePullPolicy: Never     # no registry: imported by up.sh
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10, failureThreshold: 5}
        resources:
          requests: {cpu: 10m, memory: 32Mi}
          limits: {memory: 128Mi}
        securityContext:
          # root for port 53, with no capability but binding it.
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  selector: {k8s-app: kube-dns}
  clusterIP: $CLUSTER_DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
YAML
  kc apply --server-side --field-manager=sandpod-testbed -f "$y" >/dev/null
  rm -f "$y"
  waitfor cluster-dns 120 kc -n kube-system rollout status deployment/coredns --timeout=1s ||
    { kc -n kube-system describe pods -l k8s-app=kube-dns | tail -n 30 >&2; die "cluster DNS (CoreDNS) did not become ready"; }
}
