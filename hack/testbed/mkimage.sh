#!/usr/bin/env bash
# Packs a root file system into a one-layer OCI image layout tar that
# `ctr images import` takes: the node bed has no registry, so images are made
# locally and imported into containerd's k8s.io namespace.
#
# usage: mkimage.sh ROOTFS REF OUT.tar ENTRYPOINT-JSON CMD-JSON [WORKDIR]
#   e.g. mkimage.sh rootfs ghcr.io/sandpod/python:3.11 python.tar null '["/bin/sh"]'
# REF must be fully qualified (registry/name:tag): kubelet normalises image
# names before asking containerd, so a short name would never match.
#
# The tar is reproducible: entries sorted, owned by 0:0, mtime 0.
set -euo pipefail
if [ $# -lt 5 ]; then
  sed -n '5,6p' "$0" >&2
  exit 2
fi
ROOTFS=$1 REF=$2 OUT=$3 EP=$4 CMD=$5 WORKDIR=${6:-/}
case "$REF" in
  */*:*) ;;
  *) echo "mkimage.sh: $REF is not fully qualified (registry/name:tag)" >&2; exit 2 ;;
esac

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/blobs/sha256"

# blob FILE: moves FILE into blobs/ under its digest; sets DIGEST and SIZE.
blob() {
  DIGEST=$(sha256sum "$1" | cut -d' ' -f1)
  SIZE=$(stat -c %s "$1")
  mv "$1" "$W/blobs/sha256/$DIGEST"
}

tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$ROOTFS" -cf "$W/layer.tar" .
blob "$W/layer.tar"
LAYER_DIGEST=$DIGEST LAYER_SIZE=$SIZE

printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"%s"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"hack/testbed/mkimage.sh"}]}' \
  "$EP" "$CMD" "$WORKDIR" "$LAYER_DIGEST" > "$W/config.json"
blob "$W/config.json"
CONFIG_DIGEST=$DIGEST CONFIG_SIZE=$SIZE

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$CONFIG_DIGEST" "$CONFIG_SIZE" "$LAYER_DIGEST" "$LAYER_SIZE" > "$W/manifest.json"
blob "$W/manifest.json"

# Both annotations: containerd names the imported image after
# io.containerd.image.name, other tools read org.opencontainers.image.ref.name.
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$DIGEST" "$SIZE" "$REF" "$REF" > "$W/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' > "$W/oci-layout"
tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$W" -cf "$OUT.tmp" oci-layout index.json blobs
mv "$OUT.tmp" "$OUT"
