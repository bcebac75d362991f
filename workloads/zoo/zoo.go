// Package zoo builds models' op graphs from Hugging Face config.json
// files: the families Llama, Mistral, Qwen2, Mixtral, GPT-2 and BERT,
// with the zoo of named models (models/*.json: the published configs,
// each with its source and published parameter count under "_trnsim").
package zoo

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/nn"
)

//go:embed models/*.json
var modelFS embed.FS

// Names lists the zoo's models.
func Names() []string {
	entries, _ := modelFS.ReadDir("models")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Get returns a zoo model's config.
func Get(name string) (*Config, error) {
	data, err := modelFS.ReadFile("models/" + name + ".json")
	if err != nil || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("unknown model %q (the zoo: %s; or give hf_config: a config.json)", name, strings.Join(Names(), ", "))
	}
	c, err := ParseHF(data, "zoo/"+name+".json")
	if err != nil {
		return nil, err
	}
	c.Name = name
	return c, nil
}

// Load reads a Hugging Face config.json file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, fmt.Errorf("%s: cannot read: %v", path, err)
	}
	c, err := ParseHF(data, path)
	if err != nil {
		return nil, err
	}
	c.Name = path
	return c, nil
}

// Params counts the model's parameters from the graph of its
// architecture (a tied embedding counts once); active is what one token
// uses: for a mixture of experts, the shared weights and TopK experts'.
func (c *Config) Params() (total, active int64, err error) {
	g, err := c.Build(BuildOptions{Pass: nn.Pass{Batch: 1, Seq: 1, ActDType: isa.BF16, KVCache: true}, WeightDType: isa.BF16})
	if err != nil {
		return 0, 0, err
	}
	total = g.ParamCount()
	active = total
	if c.Experts > 0 {
		perExpert := 3 * c.Hidden * c.Intermediate
		active -= c.Layers * (c.Experts - c.TopK) * perExpert
	}
	return total, active, nil
}
