package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trnsim/trnsim/runner"
	"github.com/trnsim/trnsim/sweep"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var out, shard string
	var jobs int
	var quiet bool
	cmd := &cobra.Command{
		Use:   "sweep FILE --out DIR",
		Short: "Run a run config over a grid of parameter values (a sweep file), in parallel, resumably and in shards",
		Long: `sweep reads a sweep file (base: a run config; mode: grid, zip or random;
axes: config paths and their values), validates every point first, then runs
each in its own trnsim process and appends its result to DIR/results.csv and
DIR/results.jsonl as it finishes. Rerunning the same command resumes: points
already in results.jsonl are skipped. --shard i/N runs the points whose index
is i modulo N; under a Slurm array or a Kubernetes Indexed Job the shard comes
from the environment (see docs/sweeps.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out: required (the folder for results.csv and results.jsonl)")
			}
			spec, err := sweep.Load(args[0])
			if err != nil {
				return err
			}
			o := sweep.Options{OutDir: out, Jobs: jobs, Progress: stderr}
			progress := stderr
			if quiet {
				o.Progress, progress = nil, io.Discard
			}
			if err := shardOptions(&o, shard, os.Getenv); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.Exe = exe
			pts, err := spec.Resolve(buildRevision(), jobs)
			if err != nil {
				return err
			}
			if spec.Dropped > 0 {
				fmt.Fprintf(progress, "sweep: %d points valid (%d dropped by where: %s)\n", len(pts), spec.Dropped, spec.Where)
			} else {
				fmt.Fprintf(progress, "sweep: %d points valid\n", len(pts))
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			sum, err := spec.Run(ctx, pts, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "sweep: %d points in this shard, %d already done, %d run, %d failed; results in %s\n",
				sum.Points, sum.Skipped, sum.Ran, sum.Failed, out)
			if sum.Failed > 0 {
				return &exitError{code: 1, err: fmt.Errorf("sweep: %d point(s) failed (their errors are in %s/results.jsonl)", sum.Failed, out)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder for results.csv and results.jsonl")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "points run at once")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress lines on stderr (errors still print)")
	cmd.Flags().StringVar(&shard, "shard", "", "i/N: run the points whose index is i modulo N (N alone: the count, for a Kubernetes Indexed Job)")
	return cmd
}

// shardOptions sets the shard from --shard (which wins) or the batch
// system's environment.
func shardOptions(o *sweep.Options, flag string, getenv func(string) string) error {
	count := 0
	if flag != "" {
		i, n, found := strings.Cut(flag, "/")
		if !found {
			v, err := strconv.Atoi(flag)
			if err != nil || v <= 0 {
				return fmt.Errorf("--shard %s: i/N, or N (with JOB_COMPLETION_INDEX set)", flag)
			}
			count = v
		} else {
			a, err1 := strconv.Atoi(i)
			b, err2 := strconv.Atoi(n)
			if err1 != nil || err2 != nil || b <= 0 || a < 0 || a >= b {
				return fmt.Errorf("--shard %s: i/N with 0 <= i < N", flag)
			}
			o.Shard, o.Shards = a, b
			return nil
		}
	}
	i, n, ok, err := sweep.ShardFromEnv(getenv, count)
	if err != nil {
		return err
	}
	if ok {
		o.Shard, o.Shards = i, n
	} else if count > 0 {
		return fmt.Errorf("--shard %d: a count alone needs JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); give i/N", count)
	}
	return nil
}

// buildRevision names the build in point ids: the VCS revision when the
// binary has one, else the version.
func buildRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return runner.Version
}

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge DIR... --out DIR",
		Short: "Join the output folders of a sweep's shards; exit 1 if a point is missing",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out: required (the folder for the merged results)")
			}
			res, err := sweep.Merge(args, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "merge: %d of %d points in %s", res.Rows, res.Points, out)
			if len(res.Duplicated) > 0 {
				fmt.Fprintf(stdout, "; %d in more than one shard (kept once)", len(res.Duplicated))
			}
			fmt.Fprintln(stdout)
			if len(res.Missing) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("merge: %d point(s) missing (no shard has them), the first %s", len(res.Missing), res.Missing[0])}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder for the merged results.csv and results.jsonl")
	return cmd
}
