package main

// The parts of BENCHMARKS.md a run keeps: each section's text lies
// between two marks, and a run that does not measure a section writes the
// file's part for it again (the instruction and hot-key sections are
// spliced into the written file; the main, sweep, client and cluster parts
// are written in their places by markdown).

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// keptSections are the sections of the timed part whose text a run that
// leaves them out keeps from the file.
var keptSections = []string{sectionMain, sectionSweep, sectionClient, sectionCluster}

// sectionMarks are the lines around section's part of BENCHMARKS.md.
func sectionMarks(section string) (begin, end string) {
	return "<!-- " + section + ": written by make bench (-sections " + section + ") -->", "<!-- /" + section + " -->"
}

// section writes a kept section's part: the one this run measured
// (write), between its marks, or else the one the file had.
func (rep report) section(b *strings.Builder, name string, write func(*strings.Builder)) {
	if !rep.cfg.has(name) {
		b.WriteString(rep.kept[name])
		return
	}
	begin, end := sectionMarks(name)
	b.WriteString(begin + "\n")
	write(b)
	b.WriteString(end + "\n\n")
}

// writeReport writes md to path, then splices in the instruction section
// icPart and the hot-key section hotPart where they are not "" (the ones
// the file had, for a run that did not measure them: a run of the main
// section alone keeps the instruction counts).
func writeReport(path, md, icPart, hotPart string) error {
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if icPart != "" {
		if err := spliceInstructions(path, icPart); err != nil {
			return err
		}
	}
	if hotPart != "" {
		if err := spliceHotKeys(path, hotPart); err != nil {
			return err
		}
	}
	return nil
}

// keptParts are the parts of the file at path of the sections in
// keptSections that cfg leaves out, by name ("" when the file has none).
func keptParts(path string, cfg config) map[string]string {
	kept := map[string]string{}
	for _, name := range keptSections {
		if !cfg.has(name) {
			begin, end := sectionMarks(name)
			if part := markedPart(path, begin, end); part != "" {
				kept[name] = part + "\n"
			}
		}
	}
	return kept
}

// markedPart is the part of the file at path from the line begin to the
// line end, both included, "" when the file has no such part.
func markedPart(path, begin, end string) string {
	text, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	i, j := bytes.Index(text, []byte(begin)), bytes.Index(text, []byte(end))
	if i < 0 || j < i {
		return ""
	}
	return string(text[i:j+len(end)]) + "\n"
}
