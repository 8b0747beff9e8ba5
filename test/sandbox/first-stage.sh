#!/bin/sh
# First stage of the test sandbox: as PID 1 of fresh namespaces, builds a private root and execs systemd.
#
# Usage: first-stage.sh NAME HOST_MNT_NS HOST_PID_NS STATE_DIR RUN_DIR
#   HOST_*_NS  inode numbers of the launcher's namespaces (readlink /proc/self/ns/*)
#   STATE_DIR  the launcher's private directory: seed/ (skeleton of /), run/ (skeleton of /run),
#              etc/ (private passwd, group, shadow, gshadow, machine-id, hostname)
#   stdin      a terminal whose other side the launcher reads: it becomes /dev/console
#   RUN_DIR    host directory bound at /run/opencode-pty
#
# systemd booted against the host's own filesystem once wiped the host's /tmp through
# systemd-tmpfiles, so every check below runs before this script changes anything at all.
set -eu

refuse() {
  echo "sandbox first stage: refusing to run: $*" >&2
  exit 64
}

[ "$#" -eq 5 ] || refuse "expected 5 arguments (NAME HOST_MNT_NS HOST_PID_NS STATE_DIR RUN_DIR), got $#"
name=$1
host_mnt=$2
host_pid=$3
state=$4
run_dir=$5

ns_inode() {
  link=$(readlink "/proc/self/ns/$1") || refuse "cannot read /proc/self/ns/$1"
  link=${link#*[}
  echo "${link%]}"
}

[ "$$" = 1 ] || refuse "not PID 1 of a new pid namespace (pid $$)"
# Top-level assignments, so a failed read ends the script (set -e); a check must never fail open.
pid_ns=$(ns_inode pid)
mnt_ns=$(ns_inode mnt)
case "$pid_ns$mnt_ns" in '' | *[!0-9]*) refuse "cannot tell the namespaces apart (pid '$pid_ns', mnt '$mnt_ns')" ;; esac
[ -n "$pid_ns" ] && [ -n "$mnt_ns" ] || refuse "cannot read the namespaces"
[ "$pid_ns" != "$host_pid" ] || refuse "still in the host's pid namespace"
[ "$mnt_ns" != "$host_mnt" ] || refuse "still in the host's mount namespace"
# A shared mount would carry every mount below back to the host (mount_namespaces(7)).
mountinfo=$(cat /proc/self/mountinfo)
[ -n "$mountinfo" ] || refuse "cannot read /proc/self/mountinfo"
case "$mountinfo" in *' shared:'*) refuse "a mount is still shared with the host" ;; esac
[ -d "$state/seed" ] && [ -d "$state/run" ] && [ -d "$state/etc" ] || refuse "no prepared state in $state"
[ -t 0 ] || refuse "standard input is not a terminal (it becomes /dev/console)"
[ -d "$run_dir" ] || refuse "no run directory $run_dir"
# The launcher waits for this line to find PID 1 on the host.
echo "sandbox first stage: namespaces verified"

# From here on only this mount namespace is changed. A private mount namespace still shares the
# host's file systems: keep libmount from creating /run/mount/utab on the host's /run.
export LIBMOUNT_UTAB="$state/utab"
mount() { command mount --no-mtab "$@"; }
root=$state/root
mount -t tmpfs -o mode=0755 sandbox-root "$root"
cp -a "$state/seed/." "$root/"

# /usr and /etc are the host's, seen through overlays whose upper layers live in a tmpfs of this
# namespace: writes inside land there and vanish with the sandbox. /usr stays read-only except the
# default install directory; /etc is writable (an installer adds a group, writes its config) and
# starts with the private account files instead of the host's.
layers=$state/layers
mkdir "$layers"
mount -t tmpfs -o mode=0700 sandbox-layers "$layers"
mkdir "$layers/usr" "$layers/usr-work" "$layers/etc" "$layers/etc-work"
mount -t overlay -o "lowerdir=/usr,upperdir=$layers/usr,workdir=$layers/usr-work" sandbox-usr "$root/usr"
mkdir -p "$root/usr/lib/opencode-pty"
mount -o remount,ro "$root/usr"
mount -t tmpfs -o mode=0755 sandbox-usr-lib "$root/usr/lib/opencode-pty"
mount -t overlay -o "lowerdir=/etc,upperdir=$layers/etc,workdir=$layers/etc-work" sandbox-etc "$root/etc"
for file in passwd group shadow gshadow machine-id hostname; do
  cp "$state/etc/$file" "$root/etc/$file"
done
mkdir -p "$root/etc/opencode-pty"
mount -t tmpfs -o mode=0755 sandbox-etc-opencode-pty "$root/etc/opencode-pty"
# Tests install their units here; the host's enabled units stay out of sight.
mount -t tmpfs -o mode=0755 sandbox-units "$root/etc/systemd/system"

mount -t tmpfs -o mode=0755,nosuid,nodev sandbox-run "$root/run"
cp -a "$state/run/." "$root/run/"
# Every command run in here first checks for this file, which the host never has: a recycled PID 1
# number can then never lead a command (or "systemctl exit", a poweroff on a host) into the host.
echo "$name" >"$root/run/opencode-pty-sandbox"
mount --bind "$run_dir" "$root/run/opencode-pty"

mount -t tmpfs -o mode=0755,nosuid sandbox-dev "$root/dev"
for node in null zero full random urandom tty; do
  : >"$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 sandbox-devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev sandbox-shm "$root/dev/shm"
# PID 1 reopens /dev/console and logs there only if it is a terminal: ours is the launcher's
# pty, whose master side the launcher copies into the boot log.
: >"$root/dev/console"
mount --bind /proc/self/fd/0 "$root/dev/console"

mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
# Root inside is root of the host kernel: keep its knobs read-only.
mount --bind -o ro "$root/proc/sys" "$root/proc/sys"
if [ -e "$root/proc/sysrq-trigger" ]; then mount --bind -o ro "$root/proc/sysrq-trigger" "$root/proc/sysrq-trigger"; fi
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
# Mounted inside the new cgroup namespace, this shows only the sandbox's own cgroup: systemd's whole tree.
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"

cd "$root"
pivot_root . .old-root
cd /
umount --no-mtab --lazy /.old-root
rmdir /.old-root

# The launcher waits for this line: from here on /proc/PID1/root is the private root.
echo "sandbox first stage: starting systemd"
# Without container= systemd's shutdown swaps off, detaches loop devices and remounts file
# systems read-only, which would reach the host's disk.
exec env -i container="$name" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /lib/systemd/systemd --unit=opencode-pty-test.target --log-target=console --show-status=false
