# Sourced by .ci/run (and usable by hand: `source .ci/postgres.sh`): installs Debian's PostgreSQL when pg_ctl is
# absent, makes a throwaway cluster (trust auth, loopback only, a free port, fsync off), starts it as the postgres
# user, exports RUMEDBENCH_TEST_PG_URL for the PostgreSQL test suite, and stops it when the shell exits.
pg_bin=""
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && pg_bin="$d"; done
if [ -z "$pg_bin" ]; then
  echo "installing Debian's postgresql for the PostgreSQL test suite"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && pg_bin="$d"; done
fi
pg_dir="$(mktemp -d /tmp/rumedbench-pg.XXXXXX)"
chown postgres "$pg_dir"
pg_port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust --no-sync >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
  -o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c unix_socket_directories=$pg_dir -c max_connections=200" \
  start >/dev/null
stop_pg() { as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$pg_dir"; }
trap stop_pg EXIT
export RUMEDBENCH_TEST_PG_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on port $pg_port for the tests"
