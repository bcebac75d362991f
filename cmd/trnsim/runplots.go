package main

import (
	"fmt"
	"os"

	"github.com/trnsim/trnsim/plots"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
)

// runPlotOptions checks run's --plots, --plot-format and --plot-window
// before anything is simulated, creates the figures' folder and asks the
// run for the engine timeline; it returns the formats.
func runPlotOptions(opts *runner.Options, dir, format, window string) ([]string, error) {
	if dir == "" {
		if window != "" {
			return nil, fmt.Errorf("--plot-window: needs --plots DIR")
		}
		return nil, nil
	}
	formats, err := plots.ParseFormats(format)
	if err != nil {
		return nil, fmt.Errorf("--plot-format: %v", err)
	}
	if window != "" {
		w, err := report.ParseTraceWindow(window)
		if err != nil {
			return nil, fmt.Errorf("--plot-window: %v", err)
		}
		opts.TimelineWindow = &w
	}
	if err := plotFolder(dir); err != nil {
		return nil, err
	}
	opts.Timeline = true
	return formats, nil
}

// validatePlotOptions checks validate's --plots and --plot-format before
// anything runs and creates the folder; it returns the formats.
func validatePlotOptions(dir, format string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	formats, err := plots.ParseFormats(format)
	if err != nil {
		return nil, fmt.Errorf("--plot-format: %v", err)
	}
	return formats, plotFolder(dir)
}

// plotFolder creates the figures' folder (an existing folder is fine, a
// file is an error).
func plotFolder(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--plots %s: is a file, not a folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plots %s: cannot create the folder: %v", dir, unwrapPath(err))
	}
	return nil
}
