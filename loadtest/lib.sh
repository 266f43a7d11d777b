# Sourced by the bench scripts: free ports, the CPU split between the load
# generator and the servers, and stopping what a script started.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Waits for something to listen on port $1, 50 ms at a time, WAIT_PORT_TRIES
# times (200 unless set; a server under valgrind starts slowly).
wait_port() {
  for _ in $(seq 1 "${WAIT_PORT_TRIES:-200}"); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on $1" >&2; return 1
}

# Waits until the ssq on port $1 answers /ready (it leads), 100 ms at a
# time, for up to 10 s; goes on either way (the load then says why).
wait_ready() {
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/ready" >/dev/null && return 0; sleep 0.1; done
}

# The load generator and the servers under test get CPUs of their own (the
# first half for the generator, the rest for the servers and Redis), so that
# they do not take turns on the same cores and each server's CPU time per
# request can be read apart. One CPU: everything shares it.
CPUS=$(nproc)
if [ "$CPUS" -ge 2 ] && command -v taskset >/dev/null; then
  span() { if [ "$1" = "$2" ]; then echo "$1"; else echo "$1-$2"; fi; }
  GEN_CPUS=$(span 0 $(( CPUS / 2 - 1 ))); SRV_CPUS=$(span $(( CPUS / 2 )) $(( CPUS - 1 )))
  GEN="taskset -c $GEN_CPUS"; SRV="taskset -c $SRV_CPUS"
else
  GEN_CPUS=all; SRV_CPUS=all; GEN=""; SRV=""
fi

# Processes to stop and directories to remove when the script exits.
PIDS=()
TEMP_DIRS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "${TEMP_DIRS[@]}"
}
trap cleanup EXIT

# Starts a redis-server as the benchmarks run it: AOF everysec (so that its
# default AOF rewrites run too), in a directory of its own, on a free port and
# a Unix socket, on the servers' CPUs. Sets REDIS (its port), REDIS_SOCKET
# and REDIS_PID.
start_redis() {
  REDIS=$(free_port)
  local dir; dir=$(mktemp -d); TEMP_DIRS+=("$dir")
  REDIS_SOCKET=$dir/redis.sock
  $SRV redis-server --port "$REDIS" --bind 127.0.0.1 --unixsocket "$REDIS_SOCKET" --unixsocketperm 700 \
    --save "" --appendonly yes --appendfsync everysec --dir "$dir" >/dev/null &
  REDIS_PID=$!; PIDS+=($!)
  wait_port "$REDIS"
}

# Starts a one-member etcd (Debian's etcd-server), the lock of --lock-url, in
# a directory of its own on a free port, on the servers' CPUs. Sets
# ETCD_URL (for --lock-url) and ETCD_PID.
start_etcd() {
  local client peer dir; client=$(free_port); peer=$(free_port); dir=$(mktemp -d); TEMP_DIRS+=("$dir")
  $SRV etcd --name bench --data-dir "$dir/data" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "bench=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
  ETCD_PID=$!; PIDS+=($!)
  ETCD_URL=etcd://127.0.0.1:$client
  wait_port "$client"
}

# Starts a Postgres as the benchmarks run it (its defaults: synchronous_commit
# on, fsync on), initdb in a directory of its own, as the postgres user when
# run as root (Postgres refuses root), on the servers' CPUs, with a database
# `ssq`. Extra server settings in PG_SETTINGS ("-c name=value ..."). Sets
# PG_PORT, PG_URL and POSTMASTER (its pid).
start_postgres() {
  local bin; bin=${SSQ_TEST_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
  [ -x "$bin/initdb" ] || { echo "Postgres's initdb is needed: apt-get install postgresql" >&2; exit 1; }
  local as=(); [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  PG_PORT=$(free_port)
  local dir; dir=$(mktemp -d); TEMP_DIRS+=("$dir")
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
  "${as[@]}" "$bin/initdb" --auth=trust --username=ssq --no-sync -D "$dir/data" >/dev/null
  # shellcheck disable=SC2086 # PG_SETTINGS is words on purpose
  $SRV "${as[@]}" "$bin/postgres" -D "$dir/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$dir" ${PG_SETTINGS:-} >"$dir/log" 2>&1 & PIDS+=($!)
  wait_port "$PG_PORT"
  for _ in $(seq 100); do psql -h 127.0.0.1 -p "$PG_PORT" -U ssq -d postgres -Xqc 'CREATE DATABASE ssq' 2>/dev/null && break; sleep 0.1; done
  POSTMASTER=$(head -1 "$dir/data/postmaster.pid")
  PG_URL="postgres://ssq@127.0.0.1:$PG_PORT/ssq"
}

# A private MariaDB (Debian's mariadb-server) on a free port, InnoDB's log
# flushed at every commit as installed, with a database and a user `ssq`:
# MY_PORT, MARIADBD (its pid), MY_URL, MY_DIR (its data under data/, its
# socket). MY_SETTINGS: more mariadbd flags.
start_mariadb() {
  local sbin=/usr/sbin; [ -x "$sbin/mariadbd" ] || sbin=$(dirname "$(command -v mariadbd)")
  [ -x "$sbin/mariadbd" ] || { echo "mariadbd is needed: apt-get install mariadb-server" >&2; exit 1; }
  local as=(); [ "$(id -u)" -eq 0 ] && as=(--user=root)
  MY_PORT=$(free_port)
  local dir; dir=$(mktemp -d); TEMP_DIRS+=("$dir"); MY_DIR=$dir
  mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
    --skip-test-db "${as[@]}" >/dev/null
  # shellcheck disable=SC2086 # MY_SETTINGS is words on purpose
  $SRV "$sbin/mariadbd" --no-defaults --datadir="$dir/data" --port="$MY_PORT" --socket="$dir/socket" \
    --bind-address=127.0.0.1 --skip-name-resolve --max-connections=300 --innodb-buffer-pool-size=1G \
    --innodb-log-file-size=512M "${as[@]}" ${MY_SETTINGS:-} >"$dir/log" 2>&1 & PIDS+=($!); MARIADBD=$!
  wait_port "$MY_PORT"
  for _ in $(seq 100); do
    mariadb --no-defaults -uroot --socket="$dir/socket" -e "CREATE DATABASE ssq; CREATE USER 'ssq'@'127.0.0.1'; \
      GRANT ALL ON ssq.* TO 'ssq'@'127.0.0.1'" 2>/dev/null && break
    sleep 0.1
  done
  MY_URL="mysql://ssq@127.0.0.1:$MY_PORT/ssq"
}
