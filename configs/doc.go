// Package configs is the run config: its schema (hardware, workload,
// parallel, outputs), strict YAML loading with file:line errors, the
// embedded hardware presets, cost tables and default config, --set
// overrides, and the source of every resolved value. It validates what it
// loads, turns the hardware section into the typed values the rest of
// trnsim takes (isa.Limits, a compiled isa.CostModel), and maps an error
// back to the field a user wrote (FieldError, UserSet). Nothing outside it
// reads YAML but the validation cases.
package configs
