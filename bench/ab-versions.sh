#!/usr/bin/env bash
# ab-versions.sh: the server cost of two versions of the scripts, measured
# side by side: for each script, ROUNDS rounds, each running version A then
# version B by EVALSHA under redis-benchmark (8 clients, pipeline 16, 10,000
# event keys, the state present after the first calls), and reading the
# server's usec per call from INFO commandstats after CONFIG RESETSTAT. It
# prints every round and, per script, the median of the B/A ratios of the
# rounds (paired: both halves of a round see the same machine).
#
#   bench/ab-versions.sh [server binary] [A] [B] [scripts...]
#   bench/ab-versions.sh valkey-server 4 5 token_bucket ar1
#
# Defaults: redis-server, 4, 5, all four scripts. ROUNDS (15) and N (100000
# calls per half round) in the environment. The server is pinned to CPU 0
# and the load to CPU 1 when taskset exists. Needs redis-cli and
# redis-benchmark (Debian's redis-tools, installed with redis-server).
set -euo pipefail
bin=${1:-redis-server} a=${2:-4} b=${3:-5}
shift $(($# < 3 ? $# : 3))
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(token_bucket ar1 zset_log sliding_window)
rounds=${ROUNDS:-15} n=${N:-100000}
lua=$(cd "$(dirname "$0")/../lua" && pwd)
port=$((20000 + RANDOM % 10000))
pin() { if command -v taskset >/dev/null; then taskset "$@"; else shift 2; "$@"; fi; }

dir=$(mktemp -d)
"$bin" --port "$port" --save '' --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/pid" --logfile "$dir/log"
trap 'redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
command -v taskset >/dev/null && taskset -apc 0 "$(cat "$dir/pid")" >/dev/null

declare -A limits=([token_bucket]="100 100 60000" [ar1]="100 2000 60000" [zset_log]="100 60000" [sliding_window]="100 60000 1000")
echo "$("$bin" --version | cut -d' ' -f1-3); v$a then v$b per round; usec per call"
for s in "${scripts[@]}"; do
	[ -n "${limits[$s]:-}" ] || { echo "ab-versions: unknown script $s" >&2; exit 2; }
	for v in "$a" "$b"; do
		sha[$v]=$(redis-cli -p "$port" -x SCRIPT LOAD <"$lua/$s.v$v.lua")
	done
	for r in $(seq "$rounds"); do
		line="$s round $r:"
		for v in "$a" "$b"; do
			redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
			# shellcheck disable=SC2086
			pin -c 1 redis-benchmark -p "$port" -n "$n" -c 8 -P 16 -r 10000 -q \
				EVALSHA "${sha[$v]}" 1 "ab:{__rand_int__}:$s:v$v" 1 ms "" 0 ${limits[$s]} >/dev/null
			u=$(redis-cli -p "$port" INFO commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
			line="$line v$v $u"
		done
		echo "$line"
	done
done | awk -v a="$a" -v b="$b" '
	{ print }
	/ round / { s = $1; r[s, ++k[s]] = $7 / $5; if (!(s in seen)) { seen[s] = 1; order[++m] = s } }
	END {
		for (i = 1; i <= m; i++) {
			s = order[i]; c = k[s]
			for (x = 1; x <= c; x++) v[x] = r[s, x]
			for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) if (v[y] < v[x]) { t = v[x]; v[x] = v[y]; v[y] = t }
			med = (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
			printf "%-15s v%s / v%s, median of %d paired rounds: %.2f\n", s, b, a, c, med
		}
	}'
