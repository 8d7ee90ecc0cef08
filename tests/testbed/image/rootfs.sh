#!/usr/bin/env bash
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Build the test-host root filesystem: Debian bookworm (debootstrap minbase) with real
# systemd as PID 1, sshd, python3 for Ansible, sudo, git. Writes one tarball.
#
#   rootfs.sh OUT.tar [WORKDIR]
#
# This file is part of the image recipe: `bed image` keys the cached tarball by the hash of
# THIS file alone, and the image tag by the hash of the whole image/ directory. Edit it and
# the next `bed image` rebuilds from debootstrap (about 1.5 min, see ../README.md).
#
# The package list is what a plain Debian server has plus what the project documents as a
# worker requirement. Nothing the product must not assume (no jq, no python3-apt: Ansible's
# apt module installs that itself, as it must on a real minimal host).
set -euo pipefail
OUT=${1:?usage: rootfs.sh OUT.tar [WORKDIR]}
WORK=${2:-$(dirname "$OUT")/rootfs.work}
MIRROR=${FLEET_TESTBED_MIRROR:-http://deb.debian.org/debian}
PKGS=systemd,systemd-sysv,dbus,openssh-server,python3,sudo,git,libpam-systemd,libnss-myhostname,iproute2,procps,ca-certificates

rm -rf "$WORK"
mkdir -p "$WORK"
R=$WORK/root
debootstrap --variant=minbase --include="$PKGS" bookworm "$R" "$MIRROR"

# A fresh machine-id per container: systemd writes one at boot when the file is empty.
: > "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id"
: > "$R/etc/fstab"
# podman sets the hostname; a baked /etc/hostname would win inside systemd.
rm -f "$R/etc/hostname"
# debootstrap writes no /etc/hosts; without one sudo warns "unable to resolve host".
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$R/etc/hosts"
echo 'LANG=C.UTF-8' > "$R/etc/default/locale"

# Units that have no business in a container (no tty, no block devices, no periodic apt:
# a timer firing apt mid-test would make runs nondeterministic).
for u in getty@tty1.service e2scrub_reap.service systemd-pstore.service apt-daily.timer \
         apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
  find "$R/etc/systemd/system" -name "$u" -type l -delete
done
for u in console-getty.service getty@.service serial-getty@.service systemd-firstboot.service; do
  ln -sf /dev/null "$R/etc/systemd/system/$u"
done

# No SSH host keys in the image: every host generates its own at first boot.
rm -f "$R"/etc/ssh/ssh_host_*
cat > "$R/etc/systemd/system/ssh-hostkeys.service" <<'UNIT'
[Unit]
Description=Generate this host's SSH host keys (the image ships none)
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=ssh.service
UNIT
mkdir -p "$R/etc/systemd/system/ssh.service.wants"
ln -sf ../ssh-hostkeys.service "$R/etc/systemd/system/ssh.service.wants/ssh-hostkeys.service"

rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb "$R"/var/log/*.log

tar --numeric-owner --xattrs --acls -C "$R" -cf "$OUT.part" .
mv "$OUT.part" "$OUT"
rm -rf "$WORK"
echo "rootfs tarball: $OUT ($(du -h "$OUT" | cut -f1))"
