package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/trnsim/trnsim/runner"
)

func newModelsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "models [config.json...]",
		Short: "List the model zoo (or read Hugging Face config.json files) with parameter counts computed from the architecture",
		Long: `models lists the zoo's models: family, layers, hidden size, attention heads
(query/key-value), the parameter count computed from the architecture's
graph (a tied embedding counts once; a mixture of experts also gives the
active count per token) and the published figure with its source. Given
config.json files, it reads each as a run would (hf_config:) and prints the
same row.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			models, err := runner.Models(args)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "model\tfamily\tlayers\thidden\theads (q/kv)\tparams\tpublished\tsource of the count")
			for _, m := range models {
				params := humanCount(m.Params)
				if m.ActiveParams != m.Params {
					params += " (" + humanCount(m.ActiveParams) + " active)"
				}
				pub, src := "-", "-"
				if m.Published > 0 {
					pub = fmt.Sprintf("%s (%+.2f%%)", humanCount(int64(m.Published)), 100*(float64(m.Params)/m.Published-1))
					src = m.PublishedSource
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\n", m.Name, m.Family, m.Layers, m.Hidden, m.Heads, m.KVHeads, params, pub, src)
			}
			return w.Flush()
		},
	}
}

// humanCount prints a parameter count as 8.03B or 124.4M.
func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.4gM", float64(n)/1e6)
	}
	return fmt.Sprint(n)
}
