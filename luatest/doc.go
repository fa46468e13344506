// Package luatest runs Redis Lua scripts in gopher-lua against an in-memory
// keyspace that behaves like Redis 7.0 (or, with Options.Dialect, Valkey
// 8.0) for a set of string, hash, sorted-set, key and server commands, with
// a test-controlled clock and strict checks.
//
// Example:
//
//	e := luatest.New(luatest.Options{})
//	res, err := e.Run(`
//	    local n = redis.call('INCR', KEYS[1])
//	    if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
//	    return n`, []string{"rl:{user1}"}, []string{"60000"})
//	if err != nil { ... }      // *luatest.ErrorReply or *luatest.Violation
//	_ = res.Reply              // int64(1)
//	_ = res.Count("PEXPIRE")   // 1
//	e.Advance(time.Minute)     // the key expires by the engine clock
//
// # Lua environment
//
// Scripts see the base, table, string and math libraries (no io, os, debug,
// loadfile, dofile or require), KEYS and ARGV, and the redis table
// (call, pcall, error_reply, status_reply, sha1hex, log, setresp, set_repl,
// replicate_commands, LOG_* and REPL_* constants). Globals and library
// tables are read-only as in Redis 7: creating or changing a global fails
// with "Attempt to modify a readonly table", reading an undefined global
// with "Script attempted to access nonexistent global variable 'x'".
// string.format and tostring are C Lua 5.1 compatible ("%.14g" for
// tostring of numbers). pcall returns the message of a redis.call error as
// a string, as Redis 7 does.
//
// Replies and errors follow Redis's conversion rules (see Result). A
// script that raises an error gives an *ErrorReply whose message has the
// Redis 7 form, e.g. "ERR user_script:1: boom script: <sha>, on
// @user_script:1." or "WRONGTYPE Operation against ... script: <sha>, on
// @user_script:3.".
//
// # Strictness
//
// Run reports a *Violation when a command touches a key that is not in
// KEYS, when KEYS hash to different cluster slots, when the script calls a
// command luatest does not support, or when a key written by the script has
// no TTL when it ends (unless Options.AllowKeylessTTL). Violations cannot be
// caught by pcall. Engine.Do runs commands without these checks.
//
// # Known differences from Redis
//
//   - Number to string coercion by the concatenation operator (..) and by
//     other built-in string functions uses gopher-lua's formatting (Go's
//     shortest representation, integers in full), not "%.14g":
//     2^53 .. "" is "9007199254740992" here but "9.007199254741e+15" in
//     Redis. tostring and string.format are exact.
//   - The cjson, cmsgpack, bit and struct libraries are not loaded.
//   - redis.setresp(3) is accepted but replies are always converted with
//     RESP2 rules.
//   - HGETALL returns fields in insertion order (as a small listpack-encoded
//     hash does), whatever the hash size.
//   - Lua gopher-lua error messages (e.g. for arithmetic on nil) are worded
//     differently from C Lua's.
//   - Scripts are not time limited.
//   - A table assigned at a large positive integer index (t[1000000] = x)
//     makes gopher-lua fill an array up to that index, which is slow; C Lua
//     keeps such sparse keys in the hash part. Scripts meant to be tested
//     here should key sparse tables by strings or negative numbers.
//
// An Engine is not safe for concurrent use.
package luatest
