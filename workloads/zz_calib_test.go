package workloads

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
)

func TestZZCalib(t *testing.T) {
	if os.Getenv("CALIB") == "" {
		t.Skip()
	}
	for _, line := range strings.Split(os.Getenv("CALIB"), ";") {
		cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: strings.Fields(line)})
		if err != nil {
			t.Fatal(err)
		}
		prog, _, err := Lower(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := chip.Run(cfg, prog, chip.Options{NoRaceCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		plan, _ := GEMMPlan(cfg)
		e := plan.Estimate(Target(cfg))
		fmt.Printf("sim %8.1f est %8.1f pe %.0f v %.0f s %.0f dma %.0f steps %.0f fill %.0f drain %.0f stall %.0f | %v %v\n", res.SimTime.Seconds()*1e6, e.TotalNs/1e3,
			e.TensorNs/1e3, e.VectorNs/1e3, e.ScalarNs/1e3, e.DMANs/1e3, e.StepsNs/1e3, e.FillNs/1e3, e.DrainNs/1e3, e.StallNs/1e3, plan.Choices(), plan.Notes())
	}
}
