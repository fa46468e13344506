package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

func runCall(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("call", "ratelua call NAME@VERSION --addr HOST:PORT [--unit ms] KEY eventCount now mode limit...", `
Calls a script once, raw: EVALSHA <sha1> 1 KEY eventCount unit now mode
limit... (EVAL when the server answers NOSCRIPT), and prints the reply by
field name. now is an integer in the unit, or "" or - for the server's clock
(TIME); mode is 0 (a denied call records nothing) or 1 (every call records).
concurrency takes mode 0 (acquire eventCount slots, 0 decide, < 0 reset) and
answers the lease id as limit_index; mode renew or release takes the lease's
slots as eventCount and its id after max and lease. The arguments go to the
script as given; it rejects bad ones (exit 2). Exit status 1 when the
decision is not allowed (for renew and release: the lease is not held).`,
		`ratelua call `+newest("sliding_window")+` --addr 127.0.0.1:6379 'login:{203.0.113.7}' 1 - 0 1 5000 1000 5 3600000 600000`,
		`ratelua call `+newest("token_bucket")+` --addr 127.0.0.1:6379 --unit s 'api:{key42}' 1 "" 0 10 1 6`,
		`ratelua call `+newest("concurrency")+` --addr 127.0.0.1:6379 'logins:{account:42}' 1 - 0 2 30000`,
		`ratelua call `+newest("concurrency")+` --addr 127.0.0.1:6379 'logins:{account:42}' 1 - release 2 30000 1`)
	sf := addServerFlags(fs, true)
	unit := fs.String("unit", "ms", "the `UNIT` of now, of the limits' durations and of the reply's times: s, ms or us")
	pos, err := fs.parse(e, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("call", "call: missing NAME@VERSION")
	}
	script, err := parseScript("call", pos[0])
	if err != nil {
		return err
	}
	pos = pos[1:]
	if len(pos) < 5 {
		return usagef("call", "call: want KEY eventCount now mode limit..., got %d arguments", len(pos))
	}
	key, rest := pos[0], pos[1:]
	argv := append([]string{rest[0], *unit, clockArg(rest[1]), rest[2]}, rest[3:]...)

	client, err := sf.connect("call")
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, *sf.timeout)
	defer cancel()
	reply, err := execScript(ctx, client, script, key, argv)
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	names := replyNames(script)
	for i, v := range reply {
		fmt.Fprintf(e.stdout, "%s %d\n", names[i], v)
	}
	if reply[0] != 1 {
		return errDenied
	}
	return nil
}

// clockArg is the now argument: "" and "-" mean the server's clock.
func clockArg(now string) string {
	if now == "-" {
		return ""
	}
	return now
}

// execScript runs a script once on key with argv (EVALSHA, EVAL on
// NOSCRIPT) and returns its five integers. An "ERR ratelua:" reply, the
// script rejecting an argument, is a *badArgsError.
func execScript(ctx context.Context, client rueidis.Client, s ratelua.Script, key string, argv []string) ([]int64, error) {
	reply := make([]int64, 5)
	if err := s.Run(ctx, ratelua.Rueidis(client), key, argv, reply); err != nil {
		var se *ratelua.ServerError
		if errors.As(err, &se) && strings.HasPrefix(strings.TrimPrefix(se.Message, "ERR "), "ratelua:") {
			return nil, &badArgsError{err: err}
		}
		return nil, err
	}
	return reply, nil
}

// replyNames are the names of the reply's five integers, from the
// script's contract ("allowed: 1 if ...").
func replyNames(s ratelua.Script) []string {
	names := []string{"allowed", "remaining", "retry_after", "reset_after", "limit_index"}
	for i, r := range s.Reply {
		if name, _, ok := strings.Cut(r, ":"); ok && i < len(names) && name != "" && !strings.Contains(name, " ") {
			names[i] = name
		}
	}
	return names
}
