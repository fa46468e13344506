package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ratelua/ratelua"
)

func runLoad(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("load", "ratelua load --addr HOST:PORT [--functions]", `
Loads every embedded script on every node the client finds (for a cluster,
every master and replica) with SCRIPT LOAD, and prints one line per node.
With --functions, loads the Redis Functions library instead, with FUNCTION
LOAD REPLACE on every master (by ROLE; replicas get it by replication).
Both are idempotent: run them after a deploy, a restart or a failover.`,
		"ratelua load --addr 127.0.0.1:6379",
		"ratelua load --addr 127.0.0.1:7000 --functions")
	sf := addServerFlags(fs, true)
	functions := fs.Bool("functions", false, "load the Functions library (FCALL ratelua_<script>_v<N>) on every master")
	pos, err := fs.parse(e, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("load", "load: unexpected argument %s", quoted(pos[0]))
	}
	lib, err := ratelua.ReleaseLibrary(0)
	if *functions && err != nil {
		return fmt.Errorf("load --functions: %w", err)
	}
	client, err := sf.connect("load")
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, *sf.timeout)
	defer cancel()

	var report map[string]error
	if *functions {
		report, err = ratelua.LoadFunctions(ctx, ratelua.Rueidis(client), lib)
	} else {
		report, err = ratelua.NewRegistry().Load(ctx, ratelua.Rueidis(client))
	}
	scripts := len(ratelua.NewRegistry().All())
	for _, addr := range slices.Sorted(maps.Keys(report)) {
		nodeErr := report[addr]
		line := addr + "  "
		switch {
		case *functions && nodeErr == nil:
			line += fmt.Sprintf("library %s loaded (%s)", lib.Name,
				plural(int64(strings.Count(lib.Source, "redis.register_function(")), "function", "functions"))
		case *functions:
			line += fmt.Sprintf("library %s not loaded", lib.Name)
		case nodeErr == nil:
			line += plural(int64(scripts), "script", "scripts") + " loaded"
		default:
			line += "scripts not loaded"
		}
		if nodeErr != nil {
			line += " (failed)"
		}
		fmt.Fprintln(e.stdout, line)
	}
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if len(report) == 0 {
		return errors.New("load: the client knows no nodes")
	}
	return nil
}
