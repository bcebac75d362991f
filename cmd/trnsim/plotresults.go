package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trnsim/trnsim/plots"
	"github.com/trnsim/trnsim/report"
)

// isResultsFile says whether plot's argument is a run's results file (a
// path ending .json) rather than a sweep's folder; any other file is an
// error naming it.
func isResultsFile(path string) (bool, error) {
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return true, nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		if filepath.Base(path) == "results.jsonl" {
			return false, fmt.Errorf("%s: give the sweep's folder (%s), not its results.jsonl", path, filepath.Dir(path))
		}
		ext := "a file without an extension"
		if e := filepath.Ext(path); e != "" {
			ext = "a " + e + " file"
		}
		return false, fmt.Errorf("%s: is %s; give a run's results .json (trnsim run --json) or a sweep's output folder", path, ext)
	}
	return false, nil
}

// sweepOnlyFlags are plot's flags that draw a sweep, not a run.
var sweepOnlyFlags = []string{"x", "y", "heat", "pareto", "fix", "better-x", "better-y", "log-x", "log-y"}

// plotResults redraws a run's figures from its results.json into out
// (default: the file's folder).
func plotResults(cmd *cobra.Command, path, out, format string, stdout io.Writer) error {
	for _, name := range sweepOnlyFlags {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s: draws a sweep; %s is a run's results (plot RESULTS.json [--out DIR] [--plot-format png,svg])", name, path)
		}
	}
	formats, err := plots.ParseFormats(format)
	if err != nil {
		return fmt.Errorf("--plot-format: %v", err)
	}
	rep, err := readResults(path)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Dir(path)
	}
	if err := plotFolder(out); err != nil {
		return fmt.Errorf("--out: %v", strings.TrimPrefix(err.Error(), "--plots "))
	}
	files, err := rep.WriteFigures(out, formats...)
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if rep.Timeline == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "trnsim: note: %s has no timeline section (a run without --plots wrote it), so no engine timeline is drawn\n", path)
	}
	return nil
}

// readResults reads a results.json and checks that it has what the
// figures need.
func readResults(path string) (*report.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, fmt.Errorf("%s: cannot read: %v", path, unwrapPath(err))
	}
	var rep report.Report
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("%s: not a trnsim results file: %v", path, err)
	}
	switch {
	case rep.SchemaVersion == 0 || len(rep.Engines) == 0:
		return nil, fmt.Errorf("%s: not a trnsim results file (no schema_version or engines)", path)
	case len(rep.Roofline) == 0:
		return nil, fmt.Errorf("%s: has no roofline section: it was written by an older trnsim; run it again with --json", path)
	case rep.SimulatedTimeS <= 0:
		return nil, fmt.Errorf("%s: simulated_time_s is %g: nothing to draw", path, rep.SimulatedTimeS)
	}
	return &rep, nil
}
