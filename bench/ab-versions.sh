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
# calls per half round) in the environment; also LIMITS (the limit
# arguments sent, instead of each script's default below, e.g. eight
# sliding_window limits), UNIT (ms) and KEYSPACE (10000 event keys; a few
# hot keys, e.g. 32, give every key many calls per second, so that a state
# moves through its buckets as in make bench's sweeps):
#
#   UNIT=us KEYSPACE=32 LIMITS='1000000 2000000 200' bench/ab-versions.sh redis-server 5 6 sliding_window
#
# LIMITS_B sends other limits to version B (A = B compares two loads of one
# version, e.g. eight limits against one); FLOOR=1 runs make bench's floor
# (an INCR + PEXPIRE script) in every round too and prints the medians of
# A and B over the floor. The server is pinned to CPU 0 and the load to CPU 1 when taskset exists. Needs redis-cli and
# redis-benchmark (Debian's redis-tools, installed with redis-server).
set -euo pipefail
bin=${1:-redis-server} a=${2:-4} b=${3:-5}
shift $(($# < 3 ? $# : 3))
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(token_bucket ar1 zset_log sliding_window)
rounds=${ROUNDS:-15} n=${N:-100000} unit=${UNIT:-ms} keyspace=${KEYSPACE:-10000}
lua=$(cd "$(dirname "$0")/../lua" && pwd)
port=$((20000 + RANDOM % 10000))
pin() { if command -v taskset >/dev/null; then taskset "$@"; else shift 2; "$@"; fi; }

dir=$(mktemp -d)
"$bin" --port "$port" --save '' --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/pid" --logfile "$dir/log"
trap 'redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
command -v taskset >/dev/null && taskset -apc 0 "$(cat "$dir/pid")" >/dev/null

declare -A limits=([token_bucket]="100 100 60000" [ar1]="100 2000 60000" [zset_log]="100 60000" [sliding_window]="100 60000 1000")
[ -z "${LIMITS:-}" ] || for s in "${scripts[@]}"; do limits[$s]=$LIMITS; done
floor=$(redis-cli -p "$port" SCRIPT LOAD "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n")
echo "$("$bin" --version | cut -d' ' -f1-3); v$a then v$b per round; usec per call; unit $unit, $keyspace keys, limits ${LIMITS:-default}${LIMITS_B:+, B limits $LIMITS_B}"
for s in "${scripts[@]}"; do
	[ -n "${limits[$s]:-}" ] || { echo "ab-versions: unknown script $s" >&2; exit 2; }
	for v in "$a" "$b"; do
		sha[$v]=$(redis-cli -p "$port" -x SCRIPT LOAD <"$lua/$s.v$v.lua")
	done
	for r in $(seq "$rounds"); do
		line="$s round $r:"
		for h in a b; do
			v=$a args=${limits[$s]}
			if [ $h = b ]; then v=$b args=${LIMITS_B:-${limits[$s]}}; fi
			redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
			# shellcheck disable=SC2086
			pin -c 1 redis-benchmark -p "$port" -n "$n" -c 8 -P 16 -r "$keyspace" -q \
				EVALSHA "${sha[$v]}" 1 "ab:{__rand_int__}:$s:v$v$h" 1 "$unit" "" 0 $args >/dev/null
			u=$(redis-cli -p "$port" INFO commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
			line="$line v$v $u"
		done
		if [ "${FLOOR:-0}" = 1 ]; then
			redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
			pin -c 1 redis-benchmark -p "$port" -n "$n" -c 8 -P 16 -r "$keyspace" -q \
				EVALSHA "$floor" 1 "ab:{__rand_int__}:floor" 60000 >/dev/null
			u=$(redis-cli -p "$port" INFO commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
			line="$line floor $u"
		fi
		echo "$line"
	done
done | awk -v a="$a" -v b="$b" '
	{ print }
	/ round / { s = $1; r[s, ++k[s]] = $7 / $5; if (!(s in seen)) { seen[s] = 1; order[++m] = s }
		if ($8 == "floor") { fa[s, k[s]] = $5 / $9; fb[s, k[s]] = $7 / $9 } }
	END {
		for (i = 1; i <= m; i++) {
			s = order[i]; c = k[s]
			for (x = 1; x <= c; x++) v[x] = r[s, x]
			for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) if (v[y] < v[x]) { t = v[x]; v[x] = v[y]; v[y] = t }
			med = (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
			printf "%-15s v%s / v%s, median of %d paired rounds: %.2f\n", s, b, a, c, med
			if ((s, 1) in fa) {
				for (x = 1; x <= c; x++) { va[x] = fa[s, x]; vb[x] = fb[s, x] }
				for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) {
					if (va[y] < va[x]) { t = va[x]; va[x] = va[y]; va[y] = t }
					if (vb[y] < vb[x]) { t = vb[x]; vb[x] = vb[y]; vb[y] = t }
				}
				ma = (c % 2) ? va[(c + 1) / 2] : (va[c / 2] + va[c / 2 + 1]) / 2
				mb = (c % 2) ? vb[(c + 1) / 2] : (vb[c / 2] + vb[c / 2 + 1]) / 2
				printf "%-15s over the floor, medians: v%s (A) %.2f, v%s (B) %.2f\n", s, a, ma, b, mb
			}
		}
	}'
