package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/trnsim/trnsim/runner"
)

// caught are the signals that stop a run cleanly, with their names.
var caught = []struct {
	sig  syscall.Signal
	name string
}{
	{syscall.SIGINT, "SIGINT"},
	{syscall.SIGTERM, "SIGTERM"},
	{syscall.SIGHUP, "SIGHUP"},
}

// catchSignals makes SIGINT, SIGTERM and SIGHUP stop the process cleanly
// while a run is in progress: guard.Stop removes the run's temporary files
// (waiting for a commit in progress, so the outputs are all old or all
// new), then the process exits with 128 + the signal's number (130 for
// SIGINT, 143 for SIGTERM). A signal the process was started ignoring (nohup,
// a background job) stays ignored. release undoes it.
func catchSignals(guard *runner.Guard, stderr io.Writer) (release func()) {
	ch := make(chan os.Signal, 1)
	for _, c := range caught {
		if !signal.Ignored(c.sig) {
			signal.Notify(ch, c.sig)
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			discarded := guard.Stop()
			sig, _ := s.(syscall.Signal)
			name := s.String()
			for _, c := range caught {
				if c.sig == sig {
					name = c.name
				}
			}
			if discarded {
				fmt.Fprintf(stderr, "trnsim: interrupted by %s; its temporary files are removed and no output was written\n", name)
			} else {
				fmt.Fprintf(stderr, "trnsim: interrupted by %s\n", name)
			}
			os.Exit(128 + int(sig))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// checkedWriter remembers the first error writing to w, so that a command
// whose standard output cannot be written (a full disk) fails instead of
// reporting success.
type checkedWriter struct {
	w   io.Writer
	err error
}

// Unwrap returns the writer written to (runner looks through it for the
// file that standard output is).
func (c *checkedWriter) Unwrap() io.Writer { return c.w }

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}
