# Sourced by the benchmarks that read Lookout's database (bench-history.sh, bench-watch.sh,
# bench-watch-waiting.sh): a throwaway PostgreSQL on 127.0.0.1 (fsync off; as user `postgres`
# when run as root: initdb refuses root), stopped and removed on exit. Gives `$bin_dir`,
# `$migrations`, `$work`, `$port`, `psql` (quiet, stopping at the first error, as `bench`) and
# `lookout_db NAME` (a database with upstream's migrations). Run from the repository's root.
bin_dir=$(dirname "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
migrations=contract/lookout/migrations
[ -d "$migrations" ] || { echo "no $migrations (run from a complete clone)" >&2; exit 2; }
work=$(mktemp -d /tmp/retryctl-bench-pg.XXXXXX)
chmod 755 "$work"
as=()
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; as=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as[@]}" "$bin_dir/initdb" -D "$work/data" -U bench -A trust --no-sync -E UTF8 --locale=C >/dev/null
"${as[@]}" "$bin_dir/pg_ctl" -D "$work/data" -l "$work/log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start >/dev/null
trap '"${as[@]}" "$bin_dir/pg_ctl" -D "$work/data" -m fast stop >/dev/null; rm -rf "$work"' EXIT
psql_bin=$(command -v psql)
export PGOPTIONS='-c client_min_messages=warning'  # the migrations' NOTICEs are noise here
pg=(-q -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U bench)
psql() { "$psql_bin" "${pg[@]}" "$@"; }

# A database named $1 with Lookout's schema, built from upstream's migrations in order.
lookout_db() {
  psql -d postgres -c "CREATE DATABASE $1" >/dev/null
  for f in $(ls "$migrations"/*.sql | sort); do psql -d "$1" -c "$(cat "$f")" >/dev/null; done
}
