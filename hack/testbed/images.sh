#!/usr/bin/env bash
# Builds the node bed's container images as OCI layout tars in
# <state>/images/ (hack/testbed/up.sh imports every *.tar there into
# containerd's k8s.io namespace). No registry and no network: each image is
# a root file system put together from this repository and the host.
#
#   ghcr.io/sandpod/sandpod:latest  the sandpod binary, static (controller,
#                                   agent install, bridge), and sandpod-agent
#   ghcr.io/sandpod/python:3.11     the host's Debian python3.11 with the
#                                   shared libraries it loads, busybox, bash,
#                                   and Debian's numpy and matplotlib (run_code)
#   registry.k8s.io/pause:3.10      the pod sandbox (hack/testbed/pause)
#
# usage: hack/testbed/images.sh [sandpod|pause|python]...   # default: all
#        VERSION=... sets the agent's version (default: git describe)
# State dir: ${SANDPOD_TESTBED_DIR:-<repo>/_output/testbed}.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
R=${SANDPOD_TESTBED_DIR:-$REPO/_output/testbed}
OUT=$R/images
VERSION=${VERSION:-$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo dev)}
log() { echo "[$(date +%T)] images: $*" >&2; }

mkdir -p "$OUT"
W=$(mktemp -d "$OUT/.work.XXXXXX")
trap 'rm -rf "$W"' EXIT

# static BINARY: fail unless BINARY is statically linked (the images carry no
# C library for it). ldd (always there, unlike file(1)) refuses a static one.
static() {
  if ldd "$1" >/dev/null 2>&1; then
    echo "images.sh: $1 is dynamically linked:" >&2
    ldd "$1" >&2
    exit 1
  fi
}

# base_etc ROOTFS: the users and groups every image has. 65532 is the
# conventional "nonroot" user (the controller's runAsUser).
base_etc() {
  mkdir -p "$1/etc" "$1/tmp"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$1/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$1/etc/group"
  printf 'hosts: files dns\n' > "$1/etc/nsswitch.conf"
}

# --- ghcr.io/sandpod/sandpod:latest
sandpod_image() {
  local fs=$W/sandpod
  mkdir -p "$fs/usr/local/bin"
  base_etc "$fs"
  log "go build ./cmd/sandpod (static)"
  (cd "$REPO" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/sandpod/sandpod/core/agent.Version=$VERSION" \
    -o "$fs/usr/local/bin/sandpod" ./cmd/sandpod)
  static "$fs/usr/local/bin/sandpod"
  # The small agent beside it: `sandpod install-agent` copies it into the
  # pods (init-container delivery) in place of the whole binary.
  log "go build ./cmd/sandpod-agent (static)"
  (cd "$REPO" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/sandpod/sandpod/core/agent.Version=$VERSION" \
    -o "$fs/usr/local/bin/sandpod-agent" ./cmd/sandpod-agent)
  static "$fs/usr/local/bin/sandpod-agent"
  "$HERE/mkimage.sh" "$fs" ghcr.io/sandpod/sandpod:latest "$OUT/sandpod.tar" '["/usr/local/bin/sandpod"]' 'null'
}

# --- registry.k8s.io/pause:3.10
pause_image() {
  local fs=$W/pause
  mkdir -p "$fs"
  (cd "$HERE/pause" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$fs/pause" .)
  static "$fs/pause"
  "$HERE/mkimage.sh" "$fs" registry.k8s.io/pause:3.10 "$OUT/pause.tar" '["/pause"]' 'null'
}

# copy_lib ROOTFS PATH: copies a shared library (following symbolic links)
# to the same path under ROOTFS. /lib and /lib64 are links to usr/ in the
# image (as on the merged-/usr host), so everything lands under usr/.
copy_lib() {
  local p=$2
  case "$p" in /lib/* | /lib64/*) p=/usr$p ;; esac
  [ -e "$1$p" ] && return
  mkdir -p "$1$(dirname "$p")"
  cp -L "$2" "$1$p"
}

# python_scientific ROOTFS: Debian's numpy and matplotlib (and what they
# import) from the host's /usr/lib/python3/dist-packages, matplotlib's data
# and fonts, and the shared libraries their extension modules load, so that
# run_code's figures work in the bed's python image. Installs the Debian
# packages on the host first when missing (as root).
PY_SCIENTIFIC=(numpy matplotlib mpl_toolkits PIL contourpy kiwisolver dateutil pyparsing packaging fontTools cycler.py six.py)
python_scientific() {
  local fs=$1 dist=/usr/lib/python3/dist-packages m so deps
  if ! /usr/bin/python3 -c 'import numpy, matplotlib' 2>/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "images.sh: needs Debian's python3-numpy and python3-matplotlib on the host" >&2; exit 1; }
    log "installing python3-numpy and python3-matplotlib with apt (once)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-numpy python3-matplotlib >&2
  fi
  mkdir -p "$fs$dist"
  for m in "${PY_SCIENTIFIC[@]}"; do
    [ -e "$dist/$m" ] || { echo "images.sh: $dist/$m is missing" >&2; exit 1; }
    tar -C / --exclude='__pycache__' --exclude='*/tests' -chf - "${dist#/}/$m" | tar -C "$fs" -xf -
  done
  # Debian keeps matplotlib's data (fonts, the default matplotlibrc) in
  # /usr/share and /etc; -h copies what its links point to.
  tar -C / -chf - usr/share/matplotlib etc/matplotlibrc | tar -C "$fs" -xf -
  while read -r so; do
    deps=$(ldd "$so" 2>/dev/null) || continue
    if grep -q 'not found' <<<"$deps"; then
      echo "images.sh: $so needs a library the host lacks: $(awk '/not found/{print $1}' <<<"$deps")" >&2
      exit 1
    fi
    while read -r dep; do
      copy_lib "$fs" "$dep"
    done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$deps")
  done < <(find "$fs$dist" -name '*.so*' -type f | sed "s#^$fs##")
}

# --- ghcr.io/sandpod/python:3.11
python_image() {
  local fs=$W/python py=/usr/bin/python3.11 lib=/usr/lib/python3.11
  if [ ! -x $py ] || [ ! -d $lib ]; then
    echo "images.sh: needs the host's $py and $lib (Debian python3.11)" >&2
    exit 1
  fi
  if [ ! -f /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
    echo "images.sh: needs a static /bin/busybox (apt-get install busybox-static)" >&2
    exit 1
  fi
  mkdir -p "$fs"/{bin,usr/bin,usr/lib,usr/lib64,workspace,root,proc,sys,dev}
  ln -s usr/lib "$fs/lib"
  ln -s usr/lib64 "$fs/lib64"
  base_etc "$fs"
  chmod 0777 "$fs/workspace"
  cp /bin/busybox "$fs/bin/busybox"
  local a
  for a in $(/bin/busybox --list); do
    [ "$a" = busybox ] || ln -s busybox "$fs/bin/$a"
  done
  # bash, with the libraries it loads: E2B's SDK runs every command as
  # /bin/bash -l -c (hack/testbed/e2b.sh runs E2B's SDK against the bed).
  cp /bin/bash "$fs/bin/bash"
  while read -r dep; do
    copy_lib "$fs" "$dep"
  done < <(ldd /bin/bash | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
  cp $py "$fs/usr/bin/python3.11"
  ln -s python3.11 "$fs/usr/bin/python3"
  ln -s python3.11 "$fs/usr/bin/python"
  # The standard library without its tests, caches, the static libpython
  # (config-*, 25 MB) and Debian's hooks that point outside it.
  tar -C / --exclude='__pycache__' --exclude='usr/lib/python3.11/test' \
    --exclude='usr/lib/python3.11/config-3.11-*' --exclude='usr/lib/python3.11/sitecustomize.py' \
    --exclude='usr/lib/python3.11/EXTERNALLY-MANAGED' -cf - "${lib#/}" | tar -C "$fs" -xf -
  # Every library the interpreter and its extension modules load, and the
  # dynamic loader. A module whose library the host lacks is left out.
  local so deps dep missing
  for so in "$py" "$lib"/lib-dynload/*.so; do
    deps=$(ldd "$so" 2>/dev/null) || continue
    missing=$(awk '/not found/{print $1}' <<<"$deps")
    if [ -n "$missing" ]; then
      log "leaving out $(basename "$so"): host lacks $missing"
      rm -f "$fs$so"
      continue
    fi
    while read -r dep; do
      copy_lib "$fs" "$dep"
    done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$deps")
  done
  python_scientific "$fs"
  # TLS roots, so https from a sandbox works when the network allows it.
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$fs/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$fs/etc/ssl/certs/"
  fi
  # The image must run the interpreter with what it carries: try it in a
  # chroot (as root; skipped otherwise).
  if [ "$(id -u)" = 0 ]; then
    chroot "$fs" /bin/bash -l -c 'true' || { echo "images.sh: bash does not run in the python image root" >&2; exit 1; }
    chroot "$fs" /usr/bin/python3 -c 'import json, ssl, sqlite3, hashlib, ctypes, zlib, decimal' ||
      { echo "images.sh: python3 does not run in its image root" >&2; exit 1; }
    chroot "$fs" /bin/env MPLBACKEND=Agg HOME=/tmp /usr/bin/python3 -c \
      'import numpy, matplotlib.pyplot as p; p.plot(numpy.arange(3)); p.savefig("/tmp/f.png")' ||
      { echo "images.sh: numpy and matplotlib do not run in the python image root" >&2; exit 1; }
    rm -rf "$fs/tmp/f.png" "$fs/tmp/matplotlib"*
  fi
  "$HERE/mkimage.sh" "$fs" ghcr.io/sandpod/python:3.11 "$OUT/python.tar" 'null' '["/bin/sh"]' /workspace
}

# Arguments pick images (sandpod, pause, python); none means all.
[ $# -gt 0 ] || set -- sandpod pause python
for img in "$@"; do
  case "$img" in
    sandpod | pause | python) "${img}_image" ;;
    *) echo "images.sh: unknown image $img (want sandpod, pause or python)" >&2; exit 2 ;;
  esac
done
log "$(du -h "$OUT"/*.tar | awk '{printf "%s %s, ", $2, $1}' | sed "s#$OUT/##g")in $OUT"
