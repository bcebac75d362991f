package cost

// Power is an accelerator's power figure: watts at its rated maximum
// (TDP or TGP), the figure's confidence tag and its source.
type Power struct {
	Watts       float64
	Tag, Source string
}

// chipPower is the Trainium and Inferentia chips' power where a reference
// gives one. AWS does not publish it (gpu.md §4.4, ml-engineering lists
// Trainium2 as "N/A" [S6]); the figures here are third-party.
var chipPower = map[string]Power{
	"trn2": {Watts: 500, Tag: "3P",
		Source: "~500 W per Trainium2 chip: an analyst's report (trainium.md §8 [S26, 3P]; gpu.md §1.2, SemiAnalysis via tengele.com [S11])"},
	"trn3": {Watts: 1000, Tag: "3P",
		Source: "\"likely ~1 kW\" per Trainium3 chip: an AWS VP's hint reported by Datacenter Dynamics (gpu.md §1.2 [S12])"},
}

// ChipPower returns a Trainium or Inferentia chip preset's power; ok is
// false where no reference gives one (trn1, inf2: not published).
func ChipPower(preset string) (Power, bool) {
	p, ok := chipPower[preset]
	return p, ok
}

// JoulesPerToken is the energy of a token produced at tokensPerS by
// hardware drawing watts (0 without throughput).
func JoulesPerToken(watts, tokensPerS float64) float64 {
	if !(tokensPerS > 0) || !(watts > 0) {
		return 0
	}
	return watts / tokensPerS
}

// WhPerMillionTokens is a million tokens' energy in watt-hours at
// joulesPerToken.
func WhPerMillionTokens(joulesPerToken float64) float64 { return joulesPerToken * 1e6 / 3600 }

// EnergyNote is how the energy figures are meant.
const EnergyNote = "estimates at the accelerators' rated power (TDP/TGP, or the tagged figure), accelerators only: no host, network or cooling; real draw is usually below it"
