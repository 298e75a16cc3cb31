#!/usr/bin/env bash
# Install and start what the execute tests need: bubblewrap, a Docker engine, and a small
# test image built from this machine's own packages (no registry is contacted).
# Idempotent; run as root on Debian 12. Each part that fails is reported and skipped, so
# the tests that need it skip with a reason instead of the whole suite failing.
#
#   bash tests/execute/setup_services.sh        # then: pytest tests/execute
#
# Environment: FOUR_TEST_IMAGE (default four-test:latest), FOUR_DOCKERD_LOG.
set -u

IMAGE="${FOUR_TEST_IMAGE:-four-test:latest}"
DOCKERD_LOG="${FOUR_DOCKERD_LOG:-/tmp/four-dockerd.log}"

say() { printf 'setup_services: %s\n' "$*"; }

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
if ((${#need[@]})); then
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null ||
        say "apt-get install ${need[*]} failed"
fi

if command -v bwrap >/dev/null 2>&1; then
    if bwrap --ro-bind / / --unshare-all --die-with-parent true 2>/tmp/four-bwrap.err; then
        say "bubblewrap works"
    else
        say "bubblewrap cannot start: $(cat /tmp/four-bwrap.err)"
    fi
fi

if ! command -v dockerd >/dev/null 2>&1; then
    say "no dockerd; docker tests will skip"
    exit 0
fi

if ! docker info >/dev/null 2>&1; then
    say "starting dockerd (log: $DOCKERD_LOG)"
    # No iptables, bridge or overlayfs: this machine's kernel and privileges may lack them,
    # and the tests need neither (containers run with --network none).
    nohup dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs \
        >"$DOCKERD_LOG" 2>&1 </dev/null &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        sleep 0.5
    done
fi
if ! docker info >/dev/null 2>&1; then
    say "dockerd did not answer; last log lines:"
    tail -n 20 "$DOCKERD_LOG" 2>/dev/null
    exit 0
fi
say "dockerd answers"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "image $IMAGE present"
    exit 0
fi

# A root filesystem of bash, coreutils, procps and a few tools, copied from the host's own
# installed packages together with the shared libraries they load.
root="$(mktemp -d /tmp/four-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/usr/bin "$root"/usr/sbin "$root"/usr/lib "$root"/usr/lib64 \
    "$root"/etc "$root"/tmp "$root"/root "$root"/work "$root"/proc "$root"/dev "$root"/sys
chmod 1777 "$root/tmp"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done

files=()
for pkg in bash coreutils procps grep sed findutils gawk util-linux; do
    while IFS= read -r f; do
        case "$f" in /usr/share/* | /etc/*) continue ;; esac
        [[ -f "$f" && -x "$f" ]] && files+=("$(readlink -f "$f")")
    done < <(dpkg -L "$pkg" 2>/dev/null)
done
copy() { # copy a host file to the same (resolved) path under the root
    local real
    real="$(readlink -f "$1")"
    mkdir -p "$root$(dirname "$real")"
    cp -a "$real" "$root$real" 2>/dev/null
    # keep the name a binary asks for (a library's soname link) as well
    if [[ "$1" != "$real" && ! -e "$root$1" ]]; then
        mkdir -p "$root$(dirname "$1")"
        ln -s "$real" "$root$1" 2>/dev/null
    fi
}
for f in "${files[@]}"; do copy "$f"; done
while IFS= read -r lib; do copy "$lib"; done < <(
    for f in "${files[@]}"; do ldd "$f" 2>/dev/null; done |
        grep -o '/[^ ]*' | sort -u
)
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"

if tar -C "$root" -c . | docker import -c 'CMD ["bash"]' - "$IMAGE" >/dev/null; then
    say "built $IMAGE ($(du -sh "$root" | cut -f1))"
else
    say "docker import failed"
fi
exit 0
