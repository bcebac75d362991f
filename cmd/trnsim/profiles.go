package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts a CPU profile into cpu (none where empty) and
// returns what ends it and writes a heap profile into mem (none where
// empty), after a collection so that its live figures are the run's end.
func startProfiles(cpu, mem string) (stop func() error, err error) {
	var cf *os.File
	if cpu != "" {
		if cf, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %v", unwrapPath(err))
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			return nil, fmt.Errorf("--cpuprofile: %v", err)
		}
	}
	return func() error {
		if cf != nil {
			pprof.StopCPUProfile()
			if err := cf.Close(); err != nil {
				return fmt.Errorf("--cpuprofile: %v", unwrapPath(err))
			}
		}
		if mem == "" {
			return nil
		}
		runtime.GC()
		mf, err := os.Create(mem)
		if err != nil {
			return fmt.Errorf("--memprofile: %v", unwrapPath(err))
		}
		werr := pprof.WriteHeapProfile(mf)
		if cerr := mf.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("--memprofile: %v", werr)
		}
		return nil
	}, nil
}
