#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, from Debian packages, to run the workflow through sbatch:
#   bench/slurm_local.sh start    install (once), configure and start the daemons; waits until the node is idle
#   bench/slurm_local.sh stop     cancel every job, stop every daemon this script started, wait until they are gone
#   bench/slurm_local.sh status   the daemons' pids and `sinfo`
# Needs root on a Debian 12 machine without systemd (a container): each daemon runs as a plain process with a
# pid file under /run. profiles/README.md says how to run the workflow on it and how long that takes.
#
# Accounting: slurmdbd with MariaDB, not `--slurm-status-command squeue`. snakemake-executor-plugin-slurm
# checks job states with `sacct` by default, guesses the account with `sacct` and validates a given one with
# `sacctmgr`; a real cluster has accounting, so with it here profiles/slurm runs unchanged and its account
# handling is tested, and `sacct` keeps every job's record (squeue forgets a job MinJobAge after its end).
# The price: MariaDB (110 MB resident) and slurmdbd (10 MB); `start` takes about 10 s in all.
#
# No cgroups: ProctrackType=proctrack/linuxproc, TaskPlugin=task/none. JobAcctGatherType=jobacct_gather/linux
# (it reads /proc, no cgroups either) with UsePss, so `sacct -o JobID,ReqMem,MaxRSS` shows each job's peak memory,
# the Snakemake processes in it included; it does not enforce --mem (that would be OverMemoryKill).
# The node advertises the machine's CPUs and its memory less 1 GB for the OS and the daemons
# (SelectType=select/cons_tres with CR_Core_Memory); DefMemPerCPU keeps a job that asks no memory from
# taking the whole node.
set -euo pipefail

CLUSTER=traincost
ACCOUNT=traincost
PARTITION=main
DB_NAME=slurm_acct_db
DB_USER=slurm
RUN_DIR=/run/slurm
LOG_DIR=/var/log/slurm
CONF_DIR=/etc/slurm
OS_RESERVE_MB=1024
DEF_MEM_PER_CPU_MB=1000
PACKAGES=(slurm-wlm munge slurmdbd mariadb-server)

MUNGE_PID=/run/munge/munged.pid
MARIADB_PID=/run/mysqld/mysqld.pid
MARIADB_SOCKET=/run/mysqld/mysqld.sock
SLURMDBD_PID=$RUN_DIR/slurmdbd.pid
SLURMCTLD_PID=$RUN_DIR/slurmctld.pid
SLURMD_PID=$RUN_DIR/slurmd.pid

die() { echo "slurm_local: $*" >&2; exit 1; }
say() { echo "slurm_local: $*"; }

# wait_for SECONDS WHAT COMMAND...: retry COMMAND each second until it succeeds, else fail naming WHAT
wait_for() {
  local seconds=$1 what=$2; shift 2
  for _ in $(seq "$seconds"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  die "$what not ready after ${seconds}s (logs: $LOG_DIR, /var/log/munge, /var/log/mysql)"
}

running() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

start_munge() {
  running "$MUNGE_PID" && return
  install -d -o munge -g munge -m 0755 /run/munge
  [[ -s /etc/munge/munge.key ]] || runuser -u munge -- mungekey --create
  runuser -u munge -- munged --pid-file="$MUNGE_PID"
  wait_for 10 munged munge -n
}

start_mariadb() {
  running "$MARIADB_PID" && return
  install -d -o mysql -g mysql -m 0755 /run/mysqld
  # the package's post-install created the data directory; mariadbd stays in the foreground, so detach it
  setsid mariadbd --user=mysql --pid-file="$MARIADB_PID" --socket="$MARIADB_SOCKET" \
    --log-error=/var/log/mysql/error.log </dev/null >/dev/null 2>&1 &
  wait_for 60 mariadb mariadb --socket="$MARIADB_SOCKET" -e 'select 1'
}

# the database password lives only in slurmdbd.conf (mode 600, owned by slurm); a new one each first start
write_slurmdbd_conf() {
  local conf=$CONF_DIR/slurmdbd.conf password
  if [[ -s $conf ]]; then
    password=$(sed -n 's/^StoragePass=//p' "$conf")
  else
    password=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
  fi
  mariadb --socket="$MARIADB_SOCKET" <<SQL
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$password';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$password';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
SQL
  install -m 0600 -o slurm -g slurm /dev/stdin "$conf" <<CONF
# written by bench/slurm_local.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
PidFile=$SLURMDBD_PID
LogFile=$LOG_DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=$DB_NAME
StorageUser=$DB_USER
StoragePass=$password
CONF
}

write_slurm_conf() {
  local host cpus real_mb
  host=$(hostname -s)
  # `slurmd -C` prints what slurmd detects: CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=..
  local detected
  detected=$(slurmd -C | head -1)
  cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$detected")
  real_mb=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$detected")
  [[ -n $cpus && -n $real_mb ]] || die "cannot read CPUs and RealMemory from 'slurmd -C': $detected"
  local topology
  topology=$(grep -o 'Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' <<<"$detected")
  cat >"$CONF_DIR/slurm.conf" <<CONF
# written by bench/slurm_local.sh: one node, no cgroups, accounting in slurmdbd
ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherParams=UsePss
JobAcctGatherFrequency=task=2
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$DEF_MEM_PER_CPU_MB
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$SLURMCTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
NodeName=$host CPUs=$cpus $topology RealMemory=$((real_mb - OS_RESERVE_MB)) State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}

start() {
  [[ $(id -u) == 0 ]] || die "run as root (it installs packages and starts daemons)"
  install_packages
  install -d -o slurm -g slurm -m 0755 "$RUN_DIR" "$LOG_DIR" /var/spool/slurmctld
  install -d -m 0755 /var/spool/slurmd /var/log/mysql
  chown mysql:adm /var/log/mysql
  start_munge
  start_mariadb
  write_slurmdbd_conf
  write_slurm_conf
  running "$SLURMDBD_PID" || slurmdbd
  wait_for 30 slurmdbd sacctmgr -n list cluster
  # the cluster, an account and root in it: the plugin guesses and validates the account with sacct/sacctmgr
  sacctmgr -n list cluster format=cluster | grep -qw "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
  sacctmgr -n list account format=account | grep -qw "$ACCOUNT" ||
    sacctmgr -i add account "$ACCOUNT" Description="traincost runs" Organization=traincost >/dev/null
  # slurmdbd creates root in account root: add it to ours and make that its default
  sacctmgr -n list association user=root account="$ACCOUNT" format=account | grep -qw "$ACCOUNT" ||
    sacctmgr -i add user root Account="$ACCOUNT" >/dev/null
  sacctmgr -i modify user root set DefaultAccount="$ACCOUNT" >/dev/null || true
  running "$SLURMCTLD_PID" || slurmctld
  wait_for 30 slurmctld scontrol ping
  running "$SLURMD_PID" || slurmd
  wait_for 60 "node $(hostname -s)" bash -c "sinfo -h -n '$(hostname -s)' -o %T | grep -qx idle"
  say "started: $(sinfo -h -o '%P %D %c CPUs %m MB %T' | head -1)"
}

# stop_daemon NAME PIDFILE: SIGTERM, then wait up to 30 s, then SIGKILL
stop_daemon() {
  local name=$1 pidfile=$2 pid
  [[ -s $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name ($pid) ignored SIGTERM for 30 s: SIGKILL"
      kill -KILL "$pid"
    fi
  fi
  rm -f "$pidfile"
}

stop() {
  [[ $(id -u) == 0 ]] || die "run as root"
  if running "$SLURMCTLD_PID"; then
    scancel --full --quiet --partition="$PARTITION" || true
    for _ in $(seq 30); do [[ -z $(squeue -h -t RUNNING,COMPLETING 2>/dev/null) ]] && break; sleep 1; done
  fi
  stop_daemon slurmd "$SLURMD_PID"
  stop_daemon slurmctld "$SLURMCTLD_PID"
  stop_daemon slurmdbd "$SLURMDBD_PID"
  stop_daemon mariadbd "$MARIADB_PID"
  stop_daemon munged "$MUNGE_PID"
  local left="" name
  for name in slurmd slurmctld slurmdbd slurmstepd mariadbd munged; do
    left+=$(pgrep -a -x "$name" || true)
  done
  [[ -z $left ]] || die "still running after stop: $left"
  say "stopped"
}

status() {
  local name pidfile
  for name in munged mariadbd slurmdbd slurmctld slurmd; do
    case $name in
      munged) pidfile=$MUNGE_PID ;; mariadbd) pidfile=$MARIADB_PID ;; slurmdbd) pidfile=$SLURMDBD_PID ;;
      slurmctld) pidfile=$SLURMCTLD_PID ;; slurmd) pidfile=$SLURMD_PID ;;
    esac
    if running "$pidfile"; then echo "$name: $(cat "$pidfile")"; else echo "$name: not running"; fi
  done
  if running "$SLURMCTLD_PID"; then sinfo; fi
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
