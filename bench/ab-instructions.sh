#!/usr/bin/env bash
# ab-instructions.sh: the server's instructions per call of script files
# of one contract, side by side, under callgrind: the measure of make
# bench's instruction section (inside call(), the Lua collector set apart),
# for a quick A/B of an edit before the whole section is counted again.
#
#   bench/ab-instructions.sh SERVER WORKLOAD 'ARGV' FILE...
#   bench/ab-instructions.sh redis-server four '1 ms {now} 0 100 2000 60000' \
#       lua/ar1.v7.lua ar1.edited.lua lua/ar1.v7.lua ar1.edited.lua
#
# WORKLOAD is one of make bench's: fresh (100 keys, one call each), four
# (25 keys, 4 calls 1 ms apart), denied (3 keys, 100 calls 1 ms apart not
# counted, then 50 counted) or long (3 keys, 60 calls 500 ms apart not
# counted, then 50 counted), each key on its own clock from the same start.
# ARGV is the call's arguments, {now} the clock in ms. Each FILE runs in a
# window of its own on one server (a flush, 100 warm-up calls, the
# workload), whose count it prints: instructions per counted call, the
# collector's (lua_gc) taken off, then the collector's. The first window
# of a run reads a little high (the server's first dictionary growths):
# list the files more than once, alternated, and compare the later ones.
# The state key has the form and length of a ratelua one (KEY, default
# rl:{ic0:<key>}:<the first file's name>:v6:0123abcd). Needs valgrind, python3 and
# redis-cli; the counts do not depend on the machine's load.
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,22p' "$0"; exit 2; }
server=$1 workload=$2 argv=$3
shift 3
name=$(basename "$1"); name=${name%%.*}
key=${KEY:-"rl:{ic0:<key>}:$name:v6:0123abcd"}
work=$(mktemp -d "${TMPDIR:-/tmp}/ab-instructions.XXXXXX")
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
port=$((21000 + RANDOM % 9000))
valgrind --tool=callgrind --collect-atstart=no --toggle-collect=call \
	--zero-before=lastsaveCommand --dump-before=echoCommand --dump-instr=no --dump-line=no \
	--compress-strings=no --callgrind-out-file="$work/cg.out" \
	"$server" --port "$port" --save '' --appendonly no --dir "$work" >"$work/server.log" 2>&1 &
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.3; done
shas=()
for f in "$@"; do shas+=("$(redis-cli -p "$port" -x SCRIPT LOAD <"$f")"); done
# The commands, sent one at a time (a reply read before the next is sent).
python3 - "$port" "$workload" "$argv" "$key" "${shas[@]}" <<'EOF'
import socket, sys
port, workload, argv, key, shas = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
keys, calls, prefill, pstep, step = {'fresh': (100, 1, 0, 0, 1), 'four': (25, 4, 0, 0, 1),
    'denied': (3, 50, 100, 1, 1), 'long': (3, 50, 60, 500, 500)}[workload]
s = socket.create_connection(('127.0.0.1', port))
f = s.makefile('rb')
def read():
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t == b'-':
        raise SystemExit('ab-instructions: error reply: ' + rest.decode())
    if t == b'$' and int(rest) >= 0:
        f.read(int(rest) + 2)
    elif t == b'*':
        for _ in range(max(int(rest), 0)):
            read()
def send(*args):
    b = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a.encode()
        b.append(b'$%d\r\n%s\r\n' % (len(a), a))
    s.sendall(b''.join(b))
    read()
def call(sha, k, now):
    send('EVALSHA', sha, '1', key.replace('<key>', k), *argv.replace('{now}', str(now)).split(' '))
# The collector in whole cycles at the periodic call only, as make bench
# sets EVAL's Lua state.
send('EVAL', "collectgarbage('setpause', 100000) collectgarbage('setstepmul', 1000000) collectgarbage('collect') return 1", '0')
base = 1767225600000
for i, sha in enumerate(shas):
    send('FLUSHALL', 'SYNC')
    for w in range(100):
        call(sha, 'warm%d' % w, base)
    nows = [base] * keys
    for k in range(keys):
        for _ in range(prefill):
            call(sha, 'k%d:%d' % (i, k), nows[k])
            nows[k] += pstep
    send('LASTSAVE')
    for k in range(keys):
        for _ in range(calls):
            call(sha, 'k%d:%d' % (i, k), nows[k])
            nows[k] += step
    send('ECHO', 'x')
EOF
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait
calls=$(case $workload in fresh | four) echo 100 ;; *) echo 150 ;; esac)
i=1
for f in "$@"; do
	out=$work/cg.out.$i
	total=$(grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}')
	gc=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null | awk '/:lua_gc / && !done {gsub(",", "", $1); print $1; done = 1}')
	awk -v f="$f" -v t="$total" -v g="${gc:-0}" -v n="$calls" 'BEGIN{printf "%-48s %9.1f  (collector %.1f)\n", f, (t - g) / n, g / n}'
	i=$((i + 1))
done
