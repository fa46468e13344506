#!/usr/bin/env bash
# ab-log.sh: the server cost of zset_log (any script files of its
# contract) beside the seeds' ZSET log and the INCR floor, measured in one
# run: ROUNDS rounds, each running the floor, the seeds' log, then every
# script by EVALSHA (and, with FCALL=1, the Functions libraries'
# ratelua_zset_log_v<N>), then the floor again, under redis-benchmark (8
# clients, pipeline 16, 10,000 event keys, max 100 per 60 s) and reading
# the server's usec per call from INFO commandstats after CONFIG RESETSTAT.
# It prints every round (per contender: usec per call, then the server
# process's user + system CPU usec per call, from /proc, which a loaded
# machine's preemption does not inflate) and, per contender, the median
# over the rounds of its cost over the floor (the mean of the round's two
# floors) and over the seeds' log, by usec per call and (CPU) by CPU time.
#
#   bench/ab-log.sh [server binary] [script file or version...]
#   FCALL=1 bench/ab-log.sh valkey-server 5 6
#
# A version N stands for lua/zset_log.vN.lua (and, with FCALL=1, the
# function ratelua_zset_log_vN of lua/ratelua_vN.library.lua). Every call
# takes now from the server clock (an empty now), so the seeds' script
# here reads TIME when its now is empty (bench/seedzset.go's text
# otherwise). ROUNDS (5) and N (100000 calls per contender and round: 10
# per key, so the keys fill up over the rounds as in make bench) in the
# environment. The server is pinned to CPU 0 and the load to CPU 1 when
# taskset exists.
set -euo pipefail
bin=${1:-redis-server}
shift $(($# < 1 ? $# : 1))
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(5 6)
rounds=${ROUNDS:-5} n=${N:-100000} fcall=${FCALL:-0}
lua=$(cd "$(dirname "$0")/../lua" && pwd)
port=$((20000 + RANDOM % 10000))
pin() { if command -v taskset >/dev/null; then taskset "$@"; else shift 2; "$@"; fi; }

dir=$(mktemp -d)
"$bin" --port "$port" --save '' --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/pid" --logfile "$dir/log"
trap 'redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
command -v taskset >/dev/null && taskset -apc 0 "$(cat "$dir/pid")" >/dev/null

cat >"$dir/floor.lua" <<'EOF'
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
EOF
cat >"$dir/seed.lua" <<'EOF'
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, now .. '-' .. math.random(1000000))
  redis.call('EXPIRE', key, ttl)
  return { 1, limit - count - 1, limit }
end
redis.call('EXPIRE', key, ttl)
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local retry = 0
if #oldest > 0 then
  retry = math.max(0, tonumber(oldest[2]) + window - now)
end
return { 0, 0, limit, math.ceil(retry / 1000) }
EOF

# names[i], cmd[i] (evalsha or fcall), call[i] (the command's head).
names=(floor seeds) cmds=(evalsha evalsha)
calls=("EVALSHA $(redis-cli -p "$port" -x SCRIPT LOAD <"$dir/floor.lua") 1 ab:{__rand_int__}:floor 60000")
calls+=("EVALSHA $(redis-cli -p "$port" -x SCRIPT LOAD <"$dir/seed.lua") 1 ab:{__rand_int__}:seeds 60000 100 '' 60")
for s in "${scripts[@]}"; do
	file=$s
	[[ $s =~ ^[0-9]+$ ]] && file=$lua/zset_log.v$s.lua
	i=${#names[@]}
	names+=("$(basename "$file" .lua)") cmds+=(evalsha)
	calls+=("EVALSHA $(redis-cli -p "$port" -x SCRIPT LOAD <"$file") 1 ab:{__rand_int__}:s$i 1 ms '' 0 100 60000")
	if [ "$fcall" = 1 ] && [[ $s =~ ^[0-9]+$ ]]; then
		redis-cli -p "$port" -x FUNCTION LOAD REPLACE <"$lua/ratelua_v$s.library.lua" >/dev/null
		names+=("zset_log.v$s[FCALL]") cmds+=(fcall)
		calls+=("FCALL ratelua_zset_log_v$s 1 ab:{__rand_int__}:f$i 1 ms '' 0 100 60000")
	fi
done

# cpu: the server's user + system CPU time so far, in clock ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/$(cat "$dir/pid")/stat"; }
hz=$(getconf CLK_TCK)
measure() { # index: prints usec per call, and the server's CPU usec per call
	redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
	local c0 c1 u
	c0=$(cpu)
	# shellcheck disable=SC2086
	eval "pin -c 1 redis-benchmark -p $port -n $n -c 8 -P 16 -r 10000 -q ${calls[$1]}" >/dev/null
	c1=$(cpu)
	u=$(redis-cli -p "$port" INFO commandstats | sed -n "s/^cmdstat_${cmds[$1]}:.*usec_per_call=\([0-9.]*\).*/\1/p")
	echo "$u $(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v n="$n" 'BEGIN { printf "%.2f", (b - a) * 1e6 / hz / n }')"
}

echo "$("$bin" --version | cut -d' ' -f1-3); usec per call and CPU usec per call, then ratios"
for r in $(seq "$rounds"); do
	read -r f1 g1 <<<"$(measure 0)"
	line="round $r:"
	for i in $(seq 1 $((${#names[@]} - 1))); do
		line="$line ${names[$i]} $(measure "$i")"
	done
	read -r f2 g2 <<<"$(measure 0)"
	echo "$line floor $f1 $f2 $g1 $g2"
done | awk '
	{ print }
	/^round / {
		floor = ($(NF - 3) + $(NF - 2)) / 2; cfloor = ($(NF - 1) + $NF) / 2
		for (i = 3; i < NF - 4; i += 3) {
			s = $i; u = $(i + 1); g = $(i + 2)
			if (!(s in seen)) { seen[s] = 1; order[++m] = s }
			k[s]++; r[s, k[s]] = u / floor; cr[s, k[s]] = g / cfloor
			if (s == "seeds") { seed = u; cseed = g }
			else { p[s, k[s]] = u / seed; cp[s, k[s]] = g / cseed }
		}
	}
	function median(a, s, c,    x, y, t, v) {
		for (x = 1; x <= c; x++) v[x] = a[s, x]
		for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) if (v[y] < v[x]) { t = v[x]; v[x] = v[y]; v[y] = t }
		return (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
	}
	END {
		for (i = 1; i <= m; i++) {
			s = order[i]
			line = sprintf("%-24s / floor: median %.2f (CPU %.2f)", s, median(r, s, k[s]), median(cr, s, k[s]))
			if (s != "seeds") line = line sprintf("; / seeds: median %.2f (CPU %.2f)", median(p, s, k[s]), median(cp, s, k[s]))
			print line
		}
	}'
