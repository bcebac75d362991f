package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/runner"
)

// applyGPUFlag sets the GPU baselines from --gpu: comma-separated presets
// (h100,b200), or none.
func applyGPUFlag(cfg *configs.RunConfig, list string) error {
	if cfg.Workload.Kind != "model" || cfg.Workload.Model == nil {
		return fmt.Errorf("--gpu: for model workloads (this one is %s)", cfg.Workload.Kind)
	}
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if n == "none" {
			if len(strings.Split(list, ",")) > 1 {
				return fmt.Errorf("--gpu %s: none stands alone (it turns the comparison off)", list)
			}
			cfg.Workload.Model.GPUs = nil
			return nil
		}
		if _, err := gpu.Lookup(n); err != nil {
			return fmt.Errorf("--gpu %s: %v (or none)", list, err)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return fmt.Errorf("--gpu: give GPU presets, comma-separated (GPUs: %s), or none", strings.Join(gpu.Devices(), ", "))
	}
	cfg.Workload.Model.GPUs = names
	return nil
}

// writeGPUOps writes the model's GPU kernel shapes for
// scripts/gpu-calibrate.py to path (- for standard output), from the
// lowered graph: nothing is simulated.
func writeGPUOps(cfg *configs.RunConfig, path string, stdout, stderr io.Writer) error {
	if cfg.Workload.Kind != "model" {
		return fmt.Errorf("--gpu-ops: for model workloads (this one is %s)", cfg.Workload.Kind)
	}
	info, _, err := runner.CheckLowering(cfg)
	if err != nil {
		return err
	}
	if info == nil || info.Model == nil || info.Model.Graph == nil {
		return fmt.Errorf("--gpu-ops: the workload has no model graph")
	}
	ops, skipped := gpu.Shapes(info.Model.Graph)
	f := gpu.OpsFile{Format: gpu.OpsFormat, Version: runner.Version, Workload: info.Name, Config: cfg.File,
		Defaults: gpu.Default.Constants(), Devices: gpu.Specs(), Ops: ops, Reference: gpu.ReferenceShapes(), Skipped: skipped}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if path == "-" {
		_, err = stdout.Write(data)
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--gpu-ops %s: %v", path, unwrapPath(err))
	}
	fmt.Fprintf(stderr, "trnsim: wrote %s: %d kernel shapes of %s (and %d reference shapes); time them with scripts/gpu-calibrate.py %s\n", path, len(ops), info.Name, len(f.Reference), path)
	return nil
}
