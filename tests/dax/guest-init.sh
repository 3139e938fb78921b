#!/bin/busybox sh
# Description: /init of the FS-DAX guest (built by build-guest.sh, booted by run-guest.sh).
# Loads the NVDIMM, DAX and file-system modules, turns the two emulated NVDIMMs into fsdax namespaces
# (/dev/pmem0, /dev/pmem1), makes XFS with reflink on the first and ext4 on the second, mounts both with
# -o dax=always, runs guest-tests.sh with the list named on the kernel command line (dk.list=short|long;
# dk.list=run: /dk/run/run.sh, from run-guest.sh --run) and powers off. Protocol on the console, read by
# run-guest.sh:
#   DK-GUEST <what>              progress (booted, namespaces, mounts, uptime)
#   DK-RESULT <test> PASS|FAIL|SKIP <seconds>s <detail>
#   DK-GUEST-DONE                the list ran to the end (missing: the guest hung or died)
/bin/busybox mkdir -p /proc /sys /dev /tmp /usr/sbin /usr/bin /sbin /bin
/bin/busybox --install -s 2>/dev/null
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/shm
mount -t tmpfs -o size=768M shm /dev/shm
mount -t tmpfs -o size=256M tmp /tmp

say() { echo "DK-GUEST $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
die() { # the setup failed: one FAIL result says why, then power off
    echo "DK-RESULT guest_setup FAIL 0s $*"
    echo "DK-GUEST-DONE"
    poweroff -f
}
say "booted at $(uptime_s) s uptime, kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpu(s)"

list=short
for a in $(cat /proc/cmdline); do
    case $a in
    dk.list=*) list=${a#dk.list=} ;;
    dk.only=*) export DK_GUEST_ONLY=${a#dk.only=} ;; # a glob of test names (run-guest.sh --only)
    esac
done

for m in $(cat /etc/dk-modules); do
    insmod "/lib/modules/$(uname -r)/$m.ko" 2>/tmp/insmod.err || say "insmod $m: $(cat /tmp/insmod.err)"
done

# The NVDIMMs' raw namespaces appear once nfit has probed the ACPI tables.
for i in $(seq 100); do
    [ -e /sys/bus/nd/devices/namespace1.0 ] && break
    sleep 0.1
done
[ -e /sys/bus/nd/devices/namespace1.0 ] || die "no NVDIMM namespaces (nfit/libnvdimm: $(dmesg | grep -iE 'nfit|nvdimm|nd_' | tail -3))"
for ns in namespace0.0 namespace1.0; do
    ndctl create-namespace -f -e $ns -m fsdax -M dev >/tmp/ndctl.out 2>&1 || die "ndctl create-namespace $ns: $(cat /tmp/ndctl.out)"
done
for i in $(seq 50); do
    [ -b /dev/pmem1 ] && break
    sleep 0.1
done
[ -b /dev/pmem0 ] && [ -b /dev/pmem1 ] || die "no /dev/pmem0 and /dev/pmem1 after ndctl: $(ls /dev | grep pmem)"
say "namespaces fsdax at $(uptime_s) s: $(ndctl list -N | tr -d ' \n')"

# A 2 MiB stripe unit keeps XFS's data extents 2 MiB-aligned, so DAX can map files with 2 MiB pages (as on
# real persistent memory; without it doctor reports "DAX extent is not 2 MiB-aligned").
mkfs.xfs -q -f -m reflink=1 -d su=2m,sw=1 /dev/pmem0 >/tmp/mkfs.out 2>&1 || die "mkfs.xfs: $(cat /tmp/mkfs.out)"
mkfs.ext4 -q -F -b 4096 -E nodiscard /dev/pmem1 >/tmp/mkfs.out 2>&1 || die "mkfs.ext4: $(cat /tmp/mkfs.out)"
mkdir -p /mnt/xfs /mnt/ext4
mount -t xfs -o dax=always /dev/pmem0 /mnt/xfs 2>/tmp/mount.err || die "mount xfs -o dax=always: $(cat /tmp/mount.err)"
mount -t ext4 -o dax=always /dev/pmem1 /mnt/ext4 2>/tmp/mount.err || die "mount ext4 -o dax=always: $(cat /tmp/mount.err)"
chmod 1777 /mnt/xfs /mnt/ext4
say "mounted at $(uptime_s) s: $(grep -E ' /mnt/(xfs|ext4) ' /proc/mounts | tr '\n' ';')"

if [ "$list" = run ]; then # run-guest.sh --run DIR: the caller's /dk/run/run.sh instead of a list
    echo "DK-GUEST start run"
    t0=$(cut -d. -f1 /proc/uptime)
    (cd /tmp && DAXKIT_BUILD=/dk/build DAXKIT_SRC=/dk/src bash /dk/run/run.sh 2>&1; echo $? >/tmp/run.rc) |
        sed 's/^/  run: /'
    rc=$(cat /tmp/run.rc)
    case $rc in 0) v=PASS ;; 77) v=SKIP ;; *) v=FAIL ;; esac
    echo "DK-RESULT run $v $(($(cut -d. -f1 /proc/uptime) - t0))s exit $rc"
else
    DAXKIT_BUILD=/dk/build DAXKIT_SRC=/dk/src bash /dk/src/tests/dax/guest-tests.sh "$list"
fi
say "tests ended at $(uptime_s) s uptime"
umount /mnt/xfs /mnt/ext4 2>/dev/null
echo "DK-GUEST-DONE"
poweroff -f
