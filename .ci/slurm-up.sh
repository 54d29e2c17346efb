#!/usr/bin/env bash
# Bring up a one-node SLURM cluster on this machine for the SLURM tests (tests/slurm/test_scaleout_slurm.py).
#
# Debian/Ubuntu: installs slurmctld, slurmd, slurm-client and munge (apt-get), creates the munge key,
# writes a minimal CPU-only /etc/slurm/slurm.conf for this host (proctrack/linuxproc, task/none: no
# systemd or cgroups needed, so it works in a container), starts munged, slurmctld and slurmd as
# background daemons and waits until `sinfo` shows the node up. Idempotent: a running, answering
# cluster is left alone; a slurm.conf this script did not write is never replaced.
# Needs root, or passwordless sudo. Writes its outcome ("up ..." or "unavailable: <why>") to
# .ci/.slurm-up.status, which the test suite reads to say why the SLURM tests are skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
STATUS_FILE=.ci/.slurm-up.status
MARKER="# written by cutile-workbench .ci/slurm-up.sh"
CONF=/etc/slurm/slurm.conf

say() { echo "slurm-up: $*"; }
give_up() {
    say "unavailable: $*"
    echo "unavailable: $*" > "$STATUS_FILE"
    exit 1
}

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    give_up "not root and no passwordless sudo: cannot install or start SLURM daemons"
fi
as_root() { "${SUDO[@]}" "$@"; }

node=$(hostname -s 2>/dev/null || hostname)
[ -n "$node" ] || give_up "no host name"

answering() {  # the node is up (idle/mix/alloc/comp) and answers
    local state
    state=$(timeout 10 sinfo -h -n "$node" -o %t 2>/dev/null | head -1)
    case "$state" in idle*|mix*|alloc*|comp*) return 0 ;; *) return 1 ;; esac
}

if command -v sbatch >/dev/null 2>&1 && answering; then
    say "already up: node $node is $(sinfo -h -n "$node" -o %t | head -1)"
    echo "up (already running): node $node" > "$STATUS_FILE"
    exit 0
fi

# --- packages
need=()
for bin in slurmctld slurmd sbatch munged; do
    command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || need+=("$bin")
done
if [ ${#need[@]} -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 || give_up "missing ${need[*]} and no apt-get to install them"
    say "installing slurmctld slurmd slurm-client munge (missing: ${need[*]})"
    export DEBIAN_FRONTEND=noninteractive
    pkgs=(slurmctld slurmd slurm-client munge)
    if ! as_root apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/tmp/slurm-up-apt.log 2>&1; then
        as_root apt-get update -q >>/tmp/slurm-up-apt.log 2>&1
        as_root apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>/tmp/slurm-up-apt.log 2>&1 \
            || give_up "apt-get install ${pkgs[*]} failed (see /tmp/slurm-up-apt.log)"
    fi
fi

# --- munge
if [ ! -s /etc/munge/munge.key ]; then
    say "creating the munge key"
    as_root mkdir -p /etc/munge
    as_root sh -c 'dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null'
fi
as_root chown munge:munge /etc/munge /etc/munge/munge.key
as_root chmod 0700 /etc/munge
as_root chmod 0400 /etc/munge/munge.key
as_root mkdir -p /run/munge /var/lib/munge /var/log/munge
as_root chown munge:munge /run/munge /var/lib/munge /var/log/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    say "starting munged"
    as_root runuser -u munge -- /usr/sbin/munged || give_up "munged did not start"
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
    munge -n | unmunge >/dev/null 2>&1 || give_up "munged started but credentials do not round-trip"
fi

# --- slurm.conf (CPU-only, one node, no cgroups)
cpus=$(nproc)
conf=$(cat <<EOF
$MARKER
ClusterName=wbci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
KillWait=10
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)
changed=0
if [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
    say "keeping $CONF (not written by this script)"
elif [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$conf" ]; then
    say "writing $CONF (node $node, $cpus CPUs)"
    as_root mkdir -p /etc/slurm
    printf '%s\n' "$conf" | as_root tee "$CONF" >/dev/null
    changed=1
fi
as_root mkdir -p /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm

# --- daemons (restarted by pid file only when the config this script owns changed)
running() {  # pid file names a live process with this name
    local pidfile=$1 name=$2 pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}
for d in slurmctld slurmd; do
    pidfile=/run/$d.pid
    if running "$pidfile" "$d" && [ "$changed" -eq 1 ]; then
        say "restarting $d (config changed)"
        as_root kill "$(cat "$pidfile")"
        for _ in $(seq 50); do running "$pidfile" "$d" || break; sleep 0.1; done
    fi
    if ! running "$pidfile" "$d"; then
        say "starting $d"
        as_root "/usr/sbin/$d" || give_up "$d did not start (see /var/log/slurm/$d.log)"
    fi
done

for _ in $(seq 60); do
    answering && break
    state=$(timeout 10 sinfo -h -n "$node" -o %t 2>/dev/null | head -1)
    case "$state" in down*|drain*|drng*|fail*) as_root scontrol update nodename="$node" state=resume >/dev/null 2>&1 ;; esac
    sleep 1
done
answering || give_up "node $node is not up after 60 s: $(sinfo -h -o '%n %t %E' 2>&1 | head -3) (see /var/log/slurm/)"
say "up: node $node ($cpus CPUs) is $(sinfo -h -n "$node" -o %t | head -1); $(sbatch --version)"
echo "up: node $node, $cpus CPUs, $(sbatch --version)" > "$STATUS_FILE"
